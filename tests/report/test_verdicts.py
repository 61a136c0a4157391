"""The verdict block (``ablations.report.verdicts``): one sentence per choice from the rows, never saying more than its
intervals allow, at the top of the report; a smoke run's block gives no verdicts."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ablations.quality.worth import worth
from ablations.report.comparison import comparison
from ablations.report.markdown import build_report
from ablations.report.quality_sections import summarize_quality
from ablations.report.tables import split
from ablations.report.verdicts import (
    MAX_LINES,
    SMOKE_BLOCK,
    Answer,
    Loss,
    Ratio,
    answers,
    loss_phrase,
    sentence,
    time_phrase,
    verdict_block,
)
from tests.report.conftest import recorded_inputs

MARGIN = 0.02


def _loss(diff: float, lo: float, hi: float, verdict: str, k: str | None = None, seeds: int = 5) -> Loss:
    return Loss(diff, lo, hi, verdict, seeds, "nats/byte", k, "d=128, 250 steps")


@pytest.mark.parametrize("loss, says, never", [
    (_loss(-0.35, -0.46, -0.25, "better", "2.08× [1.9, 2.28]"), ["lower loss", "−0.350", "2.08× [1.9, 2.28]"],
     ["higher", "within"]),
    (_loss(0.08, 0.03, 0.12, "worse"), ["higher loss", "+0.080 [+0.030, +0.120]"], ["lower", "within"]),
    (_loss(0.006, -0.008, 0.021, "no detectable difference"), ["no detectable difference", "a harm up to +0.021"],
     ["lower", "higher", "within"]),
    (_loss(0.002, -0.010, 0.014, "no detectable difference"), ["loss within ±0.02", "[−0.010, +0.014]"],
     ["lower", "higher", "not ruled out"]),
    (_loss(-0.01, math.nan, math.nan, "too few seeds", seeds=1), ["no interval, no verdict", "1 seed pair"],
     ["lower", "within"]),
])
def test_each_loss_verdict_is_said_as_its_interval_allows(loss, says, never):
    phrase = loss_phrase(loss, MARGIN)
    assert all(s in phrase for s in says), phrase
    assert not any(n in phrase for n in never), phrase


def test_a_loss_not_detected_is_bounded_only_where_its_whole_interval_is_inside_the_margin():
    inside = loss_phrase(_loss(0.0, -0.019, 0.019, "no detectable difference"), MARGIN)
    outside = loss_phrase(_loss(-0.01, -0.03, 0.01, "no detectable difference"), MARGIN)
    assert "within" in inside and "within" not in outside and "a gain up to −0.030" in outside


def test_a_time_ratio_is_faster_or_slower_only_where_its_interval_excludes_one_on_that_device():
    assert time_phrase("train step", (Ratio(1.01, 0.99, 1.03, "CPU"),)).startswith("no measurable difference")
    assert time_phrase("train step", (Ratio(0.87, 0.85, 0.89, "CPU"),)).startswith("train step faster")
    assert time_phrase("train step", (Ratio(1.10, 1.05, 1.15, "CPU"),)).startswith("train step slower")
    mixed = time_phrase("decode step", (Ratio(0.53, 0.51, 0.54, "CPU"), Ratio(1.0, 0.99, 1.03, "H100")))
    assert "faster on CPU" in mixed and "no measurable difference on H100" in mixed


def test_a_sentence_names_the_choice_its_cost_its_loss_and_where_it_was_measured():
    answer = Answer("LayerNorm → RMSNorm", 1, (Ratio(1.01, 0.99, 1.03, "CPU"),), (Ratio(1.0, 0.98, 1.02, "CPU"),),
                    _loss(0.002, -0.010, 0.014, "no detectable difference"), ("all",), "all")
    line = sentence(answer, MARGIN)
    assert line.startswith("- **LayerNorm → RMSNorm**: no measurable difference in train step (CPU 1.010×")
    assert "decode" not in line  # a decode ratio that moved nothing is not a sentence's news
    assert "at d=128, 250 steps" in line and line.endswith("(sweep all).")


def _block(table: pd.DataFrame, smoke: bool = False) -> list[str]:
    measured, quality, _ = split(table)
    summary = summarize_quality(table)[0] if not quality.empty else None
    return verdict_block(answers(table, comparison(measured), summary,
                                 worth(table) if not quality.empty else pd.DataFrame()), MARGIN, smoke)


def test_the_block_from_rows_holds_each_flip_once_with_the_rows_numbers(synthetic):
    table = synthetic(sweeps=("norm", "kv", "pos"))
    lines = _block(table)
    sentences = [line for line in lines if line.startswith("- **")]
    assert 0 < len(sentences) <= MAX_LINES
    names = [line.split("**")[1] for line in sentences]
    assert len(names) == len(set(names))
    rms = next(line for line in sentences if "RMSNorm" in line)
    assert "train step slower (CPU 1.120×" in rms  # the synthetic table's RMSNorm train ratio, interval [1.11, 1.13]
    summary = summarize_quality(table)[0]
    diff = summary[(summary["variant"] == "rmsnorm") & (summary["reference"] == "gpt2")
                   & (summary["metric"] == "val_loss")]["diff"].iloc[0]
    assert f"{diff:+.3f}".replace("-", "−") in rms
    gqa = next(line for line in sentences if "GQA" in line)
    assert "decode step faster (CPU 0.620×" in gqa


def test_a_smoke_runs_block_gives_no_verdicts(synthetic):
    lines = _block(synthetic(sweeps=("norm", "kv", "pos")), smoke=True)
    assert SMOKE_BLOCK in lines and not any(line.startswith("- **") for line in lines)


def test_the_block_opens_the_report(synthetic, tmp_path):
    build_report(tmp_path, synthetic(sweeps=("norm", "kv", "pos")), draw_figures=False, inputs=recorded_inputs())
    text = (tmp_path / "REPORT.md").read_text().splitlines()
    assert text[2] == "## Verdicts"


def test_a_built_report_has_no_prose_line_over_the_limit_and_its_top_tier_first(synthetic, tmp_path):
    from ablations.report.formatting import PROSE_WIDTH

    build_report(tmp_path, synthetic(sweeps=("norm", "kv", "pos")), draw_figures=False, inputs=recorded_inputs())
    lines = (tmp_path / "REPORT.md").read_text().splitlines()
    prose = [ln for ln in lines if not ln.startswith(("|", "#", "![")) and len(ln) > PROSE_WIDTH]
    assert not prose, prose[0]
    headings = [ln for ln in lines if ln.startswith("## ")]
    assert headings[:4] == ["## Verdicts", "## Cost", "## Quality", "## Details"]
    assert headings.index("## Appendix: method and setup") > headings.index("## Details")


def test_a_decode_step_far_below_its_memory_roofline_is_marked_as_overhead_bound():
    from ablations.report.verdicts import OVERHEAD_BOUND, _overhead

    slow = _overhead(pd.Series({"decode_bw_util": 0.04, "decode_roofline": 0.325}))
    assert slow == "overhead-bound at 4% of memory bandwidth; the bytes alone give 0.33×"
    assert _overhead(pd.Series({"decode_bw_util": OVERHEAD_BOUND, "decode_roofline": 0.325})) == ""
    assert _overhead(pd.Series({"decode_bw_util": float("nan")})) == ""
    counted = _overhead(pd.Series({"decode_bw_util": 0.04, "decode_roofline": 0.325, "decode_ops": 18.0}))
    assert counted == "overhead-bound at 4% of memory bandwidth, 18 operator calls a step; the bytes alone give 0.33×"


def test_an_overhead_bound_ratio_keeps_its_reading_only_where_it_moved_as_its_bytes_do():
    from ablations.report.verdicts import OVERHEAD, time_kind

    note = "overhead-bound at 4% of memory bandwidth"
    assert time_kind(Ratio(1.005, 0.99, 1.03, "H100", note, 0.33)) == OVERHEAD  # GQA on a GPU: launches, not bytes
    assert time_kind(Ratio(0.97, 0.95, 0.998, "H100", note, 1.0)) == OVERHEAD  # faster with the same bytes
    assert time_kind(Ratio(0.53, 0.51, 0.54, "CPU", note, 0.33)) == "faster"  # fewer bytes, faster: understated


def _component_rows(ratio: float, lo: float, hi: float, bytes_ratio: float, compiled: float | None) -> pd.DataFrame:
    base = {"sweep": "norm", "variant": "rmsnorm", "device": "cpu", "component": "norm", "mode": "train"}
    rows = [dict(base, metric="component_latency_ratio", value=ratio),
            dict(base, metric="component_ratio_interval", value=(hi - lo) / 2, lo=lo, hi=hi),
            dict(base, metric="component_bytes_ratio", value=bytes_ratio)]
    if compiled is not None:
        rows += [dict(base, metric="component_compiled_latency_ratio", value=compiled),
                 dict(base, metric="component_compiled_ratio_interval", value=0.01, lo=compiled - 0.01,
                      hi=compiled + 0.01)]
    return pd.DataFrame(rows)


def test_a_choice_slower_than_its_work_names_the_component_whose_kernel_costs_it():
    from ablations.report.kernel_reading import kernel_note

    note = kernel_note(_component_rows(3.6, 3.5, 3.7, 0.67, 0.9), "norm", "rmsnorm", "cpu")
    assert "its norm alone" in note and "3.600× [3.500, 3.700]" in note and "0.67× the bytes" in note
    assert "its kernel's cost, not work the choice asks for" in note and "both compiled, 0.900×" in note
    assert kernel_note(_component_rows(1.01, 0.99, 1.03, 0.67, None), "norm", "rmsnorm", "cpu") == ""  # not slower
    assert kernel_note(_component_rows(1.5, 1.4, 1.6, 1.2, None), "norm", "rmsnorm", "cpu") == ""  # asks more
    assert kernel_note(_component_rows(3.6, 3.5, 3.7, 0.67, None), "norm", "rmsnorm", "cuda") == ""  # another device
    ratio = Ratio(1.028, 1.019, 1.032, "CPU", kernel=note)
    phrase = time_phrase("train step", (ratio,))
    assert phrase.startswith("train step slower (CPU 1.028× [1.019, 1.032]; CPU: its norm alone")


def test_the_answer_reads_each_arm_at_its_own_rate_in_the_regime_trained_furthest():
    from ablations.quality.learning_rate import TUNED
    from tests.report.conftest import quality_rows

    def sweep(name: str, steps: int, rms_loss: float) -> list[dict]:
        rows = quality_rows("norm", "gpt2", 1.75) + quality_rows("norm", "rmsnorm", rms_loss)
        source = {} if name == "all" else {"lr_source": f"{TUNED}: test"}  # the shared-rate sweep has none
        return [dict(r, sweep=name, baseline="gpt2", step=steps if r["mode"] == "final" else r.get("step"), **source)
                for r in rows]

    early, late = sweep("all_tuned", 100, 1.74), sweep("lr_scan", 800, 1.60)
    for rows in (early + late, late + early):  # whichever the table lists first
        table = pd.DataFrame(rows)
        (rms,) = [line for line in _block(table) if line.startswith("- **") and "RMSNorm" in line]
        assert "lower loss" in rms and "(sweep lr_scan)" in rms  # the furthest-trained reading, 8x the bytes
        shared = pd.DataFrame(sweep("all", 800, 1.74) + early)
        (rms,) = [line for line in _block(shared) if line.startswith("- **") and "RMSNorm" in line]
        assert "(sweep all_tuned)" in rms  # a tuned reading before a shared-rate one, however far that trained


def test_a_reports_regime_line_names_its_regime_and_where_the_references_answer_is(synthetic):
    lines = _block(synthetic(sweeps=("norm", "kv", "pos")))
    (regime,) = [line for line in lines if line.startswith("A loss verdict holds for its regime")]
    assert "(here d=" in regime and "README.md#what-it-found" in regime
    found = answers(*_parts(synthetic(sweeps=("norm", "kv", "pos"))))
    (own,) = [line for line in verdict_block(found, MARGIN, answer_link=False) if line.startswith("A loss verdict")]
    assert "what-it-found" not in own  # the README's own block is the answer


def _parts(table: pd.DataFrame) -> tuple:
    measured, quality, _ = split(table)
    return table, comparison(measured), summarize_quality(table)[0], worth(table)


def test_the_answer_leads_with_the_horizon_where_k_has_stopped_moving():
    """A tuned horizon sweep is read at its settled horizon (the shortest whose k lies in the longest's interval),
    ahead of a tuned sweep trained as far, and its regime says why that horizon."""
    import numpy as np

    from ablations.quality.learning_rate import TUNED
    from tests.report.conftest import quality_rows

    def arms(sweep: str, rms_loss: float, steps: int) -> list[dict]:
        return [dict(r, sweep=sweep, baseline="gpt2", lr_source=f"{TUNED}: test", train_steps=steps,
                     step=steps if r["mode"] == "final" else r.get("step"))
                for r in quality_rows("norm", "gpt2", 1.75) + quality_rows("norm", "rmsnorm", rms_loss)]

    rows = [r for steps, rms in ((100, 1.70), (200, 1.60), (400, 1.62)) for r in arms("horizon", rms, steps)]
    table = pd.DataFrame(rows + arms("all_tuned", 1.74, 200))  # trained as far as the settled horizon
    measured, _, _ = split(table)
    w = pd.DataFrame([dict(sweep="horizon", expected=np.nan, variant="rmsnorm", train_steps=steps, k_flops=k,
                           k_flops_lo=k - 0.1, k_flops_hi=k + 0.1, k_flops_text=f"{k}×")
                      for steps, k in ((100, 1.3), (200, 1.95), (400, 2.0))])
    (rms,) = [a for a in answers(table, comparison(measured), summarize_quality(table)[0], w)
              if "RMSNorm" in a.choice]
    assert rms.trained_in == "horizon" and rms.loss is not None
    assert rms.loss.diff == pytest.approx(-0.15, abs=0.03) and rms.loss.k == "1.95×"
    assert "200 steps" in rms.loss.where and "where k has stopped moving" in rms.loss.where


def test_a_horizon_sweep_without_its_curve_is_read_at_its_longest_length_never_pooled():
    """No baseline curve, so no settled horizon: the verdict reads the longest length alone, not every length's
    seeds pooled under one line (the learning-rate check's horizon sweep trains two lengths and no curve)."""
    from ablations.quality.learning_rate import TUNED
    from tests.report.conftest import quality_rows

    def arms(rms_loss: float, steps: int) -> list[dict]:
        return [dict(r, sweep="horizon", baseline="gpt2", lr_source=f"{TUNED}: test", train_steps=steps,
                     step=steps if r["mode"] == "final" else r.get("step"))
                for r in quality_rows("norm", "gpt2", 1.75) + quality_rows("norm", "rmsnorm", rms_loss)]

    table = pd.DataFrame(arms(1.55, 100) + arms(1.80, 200))
    measured, _, _ = split(table)
    (rms,) = [a for a in answers(table, comparison(measured), summarize_quality(table)[0], pd.DataFrame())
              if "RMSNorm" in a.choice]
    assert rms.loss is not None and rms.loss.diff == pytest.approx(0.05, abs=0.03)  # 200 steps' Δ alone
    assert "200 steps" in rms.loss.where


def test_where_each_curve_reads_its_multipliers_goes_shortest_first():
    """The regime line lists a horizon's curves by length, whatever order their points' ids put the rows in."""
    from ablations.report.known_answers import regime_line

    curves = pd.DataFrame([dict(expected=math.nan, sweep="horizon", d_model=64, corpus="abc", train_steps=steps,
                                bytes_per_param=steps / 55, drop_per_doubling=0.1) for steps in (1100, 2200, 440)])
    line = regime_line(curves)
    assert line.index("440 steps") < line.index("1100 steps") < line.index("2200 steps")


def test_the_claims_read_a_horizon_sweep_where_the_verdicts_do():
    """A claim reads its choice's loss at the answer's horizon (here the longest, no curve to settle it), not at the
    first length the table lists."""
    from ablations.quality.learning_rate import TUNED
    from ablations.report.claims import claims_table
    from ablations.report.sizes import sizes_table
    from tests.report.conftest import quality_rows

    rows = [dict(r, sweep="horizon", baseline="gpt2", lr_source=f"{TUNED}: test", train_steps=steps,
                 step=steps if r["mode"] == "final" else r.get("step"))
            for steps, rms in ((100, 1.70), (400, 1.62))
            for r in quality_rows("norm", "gpt2", 1.75) + quality_rows("norm", "rmsnorm", rms)]
    table = pd.DataFrame(rows)
    measured, _, _ = split(table)
    summary = summarize_quality(table)[0]
    claims = claims_table(table, comparison(measured), summary, sizes_table(), pd.DataFrame())
    read = claims[claims["claim"].str.contains("RMSNorm")]["measured in this run"].item()
    longest = summary[(summary["variant"] == "rmsnorm") & (summary["metric"] == "val_loss")
                      & (pd.to_numeric(summary["train_steps"]) == 400)]["mean"].item()
    assert f"val loss {longest:.4f}" in read
