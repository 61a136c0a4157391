"""What a choice buys in compute, end to end at the smoke size: the baseline's budget curve trained by the quality
run, the multiplier read from it, and the calibration rows every report carries (ablations.quality.worth)."""

from __future__ import annotations

import functools

import pandas as pd
import pytest
import torch

from ablations.quality.run import run_quality
from ablations.quality.worth import AA, TWICE, worth
from ablations.results.rows import Rows
from ablations.runner import plan_point
from tests.quality.helpers import composed

CURVE = ("train.budgets=[0.5,2,4]", "train.seeds=[0,1,2,3]")


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


def test_calibration_rows_read_one_and_two_at_the_smoke_size():
    """The known answers: the baseline against itself holds 1, the baseline at 2x the steps holds 2."""
    result = worth(_table()).set_index("variant")
    for label, expected in ((AA, 1.0), (TWICE, 2.0)):
        row = result.loc[label]
        assert row["expected"] == expected and row["n"] == 4
        assert row["calibrated"], f"{label}: {row['k_steps_text']} does not hold {expected}"


def test_a_variant_gets_its_multiplier_in_steps_and_flops():
    row = worth(_table()).set_index("variant").loc["rmsnorm"]
    assert row["n"] == 4 and row["baseline"] == "gpt2"
    assert row["k_steps"] > 0 and row["k_steps_text"] != "—"
    # RMSNorm's FLOPs per step equal LayerNorm's in the work model: the two readings agree.
    assert row["flops_ratio"] == pytest.approx(1.0)
    assert row["k_flops"] == pytest.approx(row["k_steps"])


def test_no_budgets_no_multipliers():
    assert worth(pd.DataFrame([*_point("gpt2")[1]]).query("metric != 'budget_loss'")).empty


def test_the_report_opens_with_what_each_choice_buys_and_its_calibration(tmp_path):
    from ablations.report.markdown import build_report
    from ablations.results.store import COLUMNS

    table = _table().reindex(columns=COLUMNS)
    table["sweep"], table["status"] = "norm", table["status"].fillna("ok")
    text = build_report(tmp_path, table, draw_figures=False).read_text()
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == "## What each choice buys"
    buys = text.split("## What each choice buys")[1].split("\n## ")[0]
    assert "LayerNorm → RMSNorm" in buys and "compute multiplier [CI]" in buys
    assert AA in buys and TWICE in buys  # the calibration rows, each with whether it holds
    assert "| 1× |" in buys and "| 2× |" in buys
    # No block was timed in this table: no time to loss, said as a dash, not a number.
    row = next(line for line in buys.splitlines() if line.startswith("| LayerNorm → RMSNorm"))
    assert row.count("—") >= 3
