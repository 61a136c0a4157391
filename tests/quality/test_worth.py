"""What a choice buys in compute, end to end at the smoke size: the baseline's budget curve trained by the quality
run, the multiplier read from it, and the known answers every report carries (ablations.quality.worth)."""

from __future__ import annotations

import functools

import pandas as pd
import pytest
import torch

from ablations.quality.run import run_quality
from ablations.quality.worth import BETWEEN, LEFT_OUT, UNJUDGED, known_answers, known_verdict, untrusted, worth
from ablations.results.rows import Rows
from ablations.runner import plan_point
from tests.quality.helpers import composed
from tests.report.conftest import recorded_inputs

CURVE = ("train.budgets=[0.5,2,4]", "train.check_budgets=[1.5]", "train.seeds=[0,1,2,3]")


@functools.cache
def _point(variant: str, *overrides: str) -> tuple[str, tuple[dict, ...]]:
    cfg = composed(*CURVE, *overrides)
    torch.set_num_threads(1)
    rows = Rows(base={"sweep": "test", "variant": variant, "point": variant, "seed": 0})
    return run_quality(plan_point(cfg).quality, rows, torch.device("cpu")), tuple(rows.rows)


def _table() -> pd.DataFrame:
    (a, base), (b, flipped) = _point("gpt2"), _point("rmsnorm", "norm=rmsnorm")
    assert a == b == "ok"
    return pd.DataFrame([*base, *flipped])


def test_the_baseline_trains_a_full_schedule_at_every_budget_of_each_seed():
    table = _table()
    budgets = table[table["metric"] == "budget_loss"]
    checks = table[table["metric"] == "check_loss"].drop_duplicates(["seed", "budget"])
    assert sorted(checks["budget"].unique()) == [1.5] and len(checks) == 4  # never part of the curve
    assert set(budgets["variant"]) == {"gpt2"}
    steps = composed(*CURVE).train.steps
    # Each point carries its baseline's curve (its whole evidence); the curve is the baseline's seeds x budgets.
    per_point = budgets.drop_duplicates(["seed", "budget"])
    assert len(per_point) == 4 * 3
    assert sorted(set(zip(per_point["budget"], per_point["step"], strict=True))) == [
        (0.5, round(0.5 * steps)), (2.0, 2 * steps), (4.0, 4 * steps)]
    assert (budgets["value"] > 0).all()
    finals = table[(table["metric"] == "val_loss") & (table["mode"] == "final")]
    assert (finals["train_flops_step"] > 0).all()


def test_every_interior_knot_and_between_knot_budget_is_a_known_answer():
    """Each curve's known answers: its interior knots (1 and 2) left out, its between-knot budget read as a variant;
    each with the multiple it must read, what it checks and whether its interval holds it."""
    known = known_answers(worth(_table()))
    assert sorted(zip(known["expected"], known["checks"], strict=True)) == [
        (1.0, LEFT_OUT), (1.5, BETWEEN), (2.0, LEFT_OUT)]
    assert (known["n"] == 4).all()
    assert known["calibrated"].isin([True, False]).all()


def test_a_variant_gets_its_multiplier_in_steps_and_flops():
    row = worth(_table()).set_index("variant").loc["rmsnorm"]
    assert row["n"] == 4 and row["baseline"] == "gpt2"
    assert row["k_steps"] > 0 and row["k_steps_text"] != "—"
    # RMSNorm's FLOPs per step equal LayerNorm's in the work model: the two readings agree.
    assert row["flops_ratio"] == pytest.approx(1.0)
    assert row["k_flops"] == pytest.approx(row["k_steps"])


def test_beside_a_verdict_k_is_held_to_the_verdicts_holm_level():
    """With the final-loss summary, each comparison's k is also read at ``1 - alpha_adjusted``, the level its Δ's
    interval is at: at a stricter level it is wider and holds the 95% one; the known answers keep 95%."""
    from ablations.quality.multiplier import multiplier
    from ablations.quality.stats import summarize
    from ablations.quality.worth import _curve_groups, _finals, k_beside_verdict

    table = _table()
    summary = summarize(table)
    plain = worth(table, summary).set_index("variant").loc["rmsnorm"]
    # One comparison: Holm's level is the unadjusted 95%, and the two readings are the same interval.
    assert plain["holm_level"] == pytest.approx(0.95)
    assert (plain["k_flops_holm_lo"], plain["k_flops_holm_hi"]) == pytest.approx((plain["k_flops_lo"],
                                                                                   plain["k_flops_hi"]))
    strict = summary.copy()
    strict.loc[strict["metric"] == "val_loss", "alpha_adjusted"] = 0.01
    w = worth(table, strict)
    row = w.set_index("variant").loc["rmsnorm"]
    _, _, curves, final, _ = next(_curve_groups(table))
    expected = multiplier(curves, _finals(final[final["variant"] == "rmsnorm"]), 0.99)
    assert row["holm_level"] == pytest.approx(0.99)
    assert (row["k_flops_holm_lo"], row["k_flops_holm_hi"]) == pytest.approx(
        (expected.lo * row["flops_ratio"], expected.hi * row["flops_ratio"]))
    assert row["k_flops_holm_lo"] < row["k_flops_lo"] and row["k_flops_holm_hi"] > row["k_flops_hi"]
    assert k_beside_verdict(row) == row["k_flops_holm_text"] != row["k_flops_text"]
    assert k_beside_verdict(worth(table).set_index("variant").loc["rmsnorm"]) == row["k_flops_text"]
    known = known_answers(w)
    assert known["holm_level"].isna().all() and (known["k_flops_holm_text"] == "").all()


def test_no_budgets_no_multipliers():
    assert worth(pd.DataFrame([*_point("gpt2")[1]]).query("metric != 'budget_loss'")).empty


def test_the_report_opens_with_what_each_choice_buys_and_its_calibration(tmp_path):
    from ablations.report.markdown import build_report
    from ablations.results.store import COLUMNS

    table = _table().reindex(columns=COLUMNS)
    table["sweep"], table["status"] = "norm", table["status"].fillna("ok")
    text = build_report(tmp_path, table, draw_figures=False, inputs=recorded_inputs()).read_text()
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    # The answer's tier first (verdicts, cost, quality), then the details open with what each choice buys.
    assert sections.index("## What each choice buys") == sections.index("## Details") + 1
    buys = text.split("## What each choice buys")[1].split("\n## ")[0]
    assert "LayerNorm → RMSNorm" in buys and "compute multiplier [CI]" in buys
    assert LEFT_OUT in buys and BETWEEN in buys  # the known answers, each with whether it holds
    assert "| 1× |" in buys and "| 1.5× |" in buys and "| 2× |" in buys
    # The regime the multipliers are read in, beside them: bytes per parameter and the baseline's drop per doubling.
    regime = worth(table).iloc[0]
    assert f"{regime['bytes_per_param']:.3g} bytes per parameter" in buys and regime["bytes_per_param"] > 0
    # The first lines (before the tables) say whether the multipliers are trusted, as the known answers held.
    assert ("not trusted" in text.split("## Cost")[0].split("## Quality")[0]) == (not untrusted(worth(table)).empty)
    # No block was timed in this table: no time to loss, said as a dash, not a number.
    row = next(line for line in buys.splitlines() if line.startswith("| LayerNorm → RMSNorm"))
    assert row.count("—") >= 3


def test_a_failing_known_answer_changes_the_reports_first_lines(tmp_path):
    """The between-knot budget's losses moved to the 4x knot's: its reading cannot hold 1.5, and the report says in
    its first lines that its multipliers are not trusted."""
    from ablations.report.markdown import build_report
    from ablations.results.store import COLUMNS

    table = _table().reindex(columns=COLUMNS)
    table["sweep"], table["status"] = "norm", table["status"].fillna("ok")
    at_four = table[table["metric"] == "budget_loss"].query("budget == 4").set_index("seed")["value"]
    checks = table["metric"] == "check_loss"
    table.loc[checks, "value"] = table.loc[checks, "seed"].map(at_four.groupby(level=0).first()).to_numpy()
    assert not untrusted(worth(table)).empty
    head = build_report(tmp_path, table, draw_figures=False, inputs=recorded_inputs()).read_text().split("## ")[0]
    assert "The compute multipliers in this report are not trusted" in head and "1.5×" in head


def test_the_report_reads_every_budget_runs_rows_as_quality_rows():
    """A budget or between-knot run's renamed rows are training rows, never measurements of the block."""
    from ablations.quality.run import BUDGET_METRICS, CHECK_METRICS
    from ablations.report.tables import QUALITY_METRICS

    assert {*BUDGET_METRICS.values(), *CHECK_METRICS.values()} <= set(QUALITY_METRICS)


def test_a_one_seed_known_answer_cannot_hold_and_the_report_says_why(tmp_path):
    """One seed gives a known answer no interval: it is neither held nor missed, and the multipliers it would have
    vouched for are not trusted (the GPU quality profile's one-seed check)."""
    from ablations.report.markdown import build_report
    from ablations.results.store import COLUMNS

    table = _table().reindex(columns=COLUMNS)
    table["sweep"], table["status"] = "norm", table["status"].fillna("ok")
    table = table[pd.to_numeric(table["seed"]) == 0]
    known = known_answers(worth(table))
    assert not known.empty and known["calibrated"].isna().all()
    assert known["calibrated"].map(known_verdict).eq(UNJUDGED).all()
    assert len(untrusted(worth(table))) == len(known)
    text = build_report(tmp_path, table, draw_figures=False, inputs=recorded_inputs()).read_text()
    head = text.split("## ")[0]
    assert "not trusted" in head and "have one seed, no interval to judge" in head and "miss the" not in head
    assert "no interval (1 seed)" in text


def test_the_report_reads_every_mode_the_quality_runs_write_as_quality_rows():
    """Every ``mode=`` a module of ``ablations.quality`` writes into a row is one the report keeps among its training
    rows (``report.tables.QUALITY_MODES``): a missing one is dropped from the report without a word, as the
    learning-rate check's ``lr_check`` rows once were."""
    import ast
    from pathlib import Path

    from ablations.report.tables import QUALITY_MODES

    def named(call: ast.Call) -> str:
        return getattr(call.func, "attr", None) or getattr(call.func, "id", "")

    files = (Path(__file__).parents[2] / "ablations" / "quality").rglob("*.py")
    written = {kw.value.value for path in files for call in ast.walk(ast.parse(path.read_text()))
               if isinstance(call, ast.Call) and named(call) not in ("memmap", "open")  # a file's mode, not a row's
               for kw in call.keywords
               if kw.arg == "mode" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)}
    assert {"final", "lr_check", "budget"} <= written  # the parse finds the writers
    assert written <= set(QUALITY_MODES), sorted(written - set(QUALITY_MODES))
