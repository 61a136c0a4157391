"""The summary counts cases, not signals: a case regressed if any of its signals did (its time, its instruction
count), and the signals are counted besides; a case whose interval is too wide to judge at the threshold is ``not
judged``, neither a regression nor a pass, with the rounds that would judge it. Synthetic rows, and one check run
end to end with the timer replaced."""

from __future__ import annotations

import json
from statistics import NormalDist

import pytest
import torch

from ablations.measure.intervals import Interval, median_interval
from ablations.measure.timing import PairedTiming
from ablations.regress import case_counts, check, cli, history, measure_case, outcome_lines, report_files, summary
from ablations.regress.paired import NOT_JUDGED, judge, pooled_rows, rounds_to_judge
from ablations.regress.revisions import REPO, resolve
from ablations.regress.trees import Tree


def row(name: str, lo: float, hi: float, threshold: float = 0.02, cg: float | None = None, rounds: int = 12) -> dict:
    """A timed case's row as ``measure_case.measure`` leaves it (``cg``: its instructions head/base, when counted)."""
    iv = Interval((lo + hi) / 2, lo, hi, 0.99)
    out = {"name": name, "counted": cg is not None, "ratio": iv.median, "lo": lo, "hi": hi, "coverage": 0.99,
           "verdict": judge(iv, threshold), "rounds": rounds, "stopped": "fixed", "base_median_s": 1e-3}
    if out["verdict"] == NOT_JUDGED:
        out["rounds_to_judge"] = rounds_to_judge(iv, rounds, threshold)
    if cg is not None:
        out["callgrind"] = {"base": 1e6, "head": 1e6 * cg, "ratio": cg,
                            "verdict": "regression" if cg > 1.01 else "unchanged"}
    return out


def report_of(cases: list[dict], groups: list[dict] | None = None) -> dict:
    return {"base": {"asked": "HEAD~1", "revision": "a" * 40}, "head": {"revision": "b" * 40},
            "threshold_pct": 2.0, "callgrind_threshold_pct": 1.0, "rounds": 12, "case_confidence": 0.99,
            "min_run_time": 0.01, "threads": 1, "torch": "2.13", "wall_s": 3.0, "callgrind_note": "",
            "intended_note": "", "time": "2026-12-01T00:00:00+0000", "cases": cases, "groups": groups or []}


def ten_cases() -> list[dict]:
    """Ten cases, two of which regressed: one on its time and its instruction count, one on its time alone."""
    cases = [row("norm/rmsnorm/forward", 1.30, 1.40, cg=1.05), row("block/gpt2/forward", 1.05, 1.08)]
    cases += [row(f"block/v{i}/forward", 0.99, 1.01) for i in range(8)]
    return cases


# --- 1. counted by case ----------------------------------------------------------------------------------------

def test_the_summary_counts_regressed_cases_not_signals():
    report = report_of(ten_cases())
    assert len(outcome_lines.regression_lines(report)) == 3  # the signals: exit status 1, one line each
    n = case_counts.counts(report)
    assert (n["compared"], n["regressed"], n["passed"], n["not_judged"], n["failed"]) == (10, 2, 8, 0, 0)
    assert n["signals"] == {"time": 2, "instructions": 1}
    assert summary.headline(report) == ("**regression**: 2 of 10 cases regressed (3 signals: 2 time, 1 instructions), "
                                        "8 passed, 0 not judged.")
    assert case_counts.regressed_text(report) == "2 of 10 cases regressed (3 signals: 2 time, 1 instructions)"
    assert summary.markdown(report).splitlines()[2].startswith(summary.headline(report) + " Time: median")


def test_groups_failures_and_cases_not_compared_are_counted_apart():
    cases = [*ten_cases()[2:4], {"name": "norm/x/forward", "verdict": "failure", "error": "the head cannot run it"},
             {"name": "attn/mha-w64/forward", "verdict": "not compared", "reason": "r"}]
    group = {"name": "block/*/forward", "cases": 2, "rounds": 24, "ratio": 1.04, "lo": 1.03, "hi": 1.05,
             "coverage": 0.99, "verdict": "regression"}
    report = report_of(cases, [group])
    assert summary.headline(report) == (
        "**regression**: 0 of 3 cases regressed, 2 passed, 0 not judged, 1 failed (the head cannot run it); "
        "1 of 1 group regressed, 0 passed, 0 not judged; 1 case not compared (below).")
    assert case_counts.regressed_text(report) == (
        "0 of 3 cases regressed, 1 failed (the head cannot run it); 1 of 1 group regressed")
    one = report_of([row("norm/rmsnorm/forward", 0.99, 1.01)])
    assert summary.headline(one) == "**no regression**: 0 of 1 case regressed, 1 passed, 0 not judged."


def test_the_check_prints_and_stores_the_counts(tmp_path, monkeypatch, capsys):
    """End to end with the timer replaced: the first case's rounds are too spread to judge, the second's a clear
    regression, intended by the head's commit message (``--honour-marker``), so the check exits 0 and says so."""
    spreads = iter([[0.391, 11.851, 0.6, 3.0, 1.0, 1.2], [1.3] * 6])

    def time_case(head: object, base: object, *, rounds: int, **_: object) -> PairedTiming:
        ratios = next(spreads)
        return PairedTiming(ratios, [1.0] * len(ratios))

    monkeypatch.setattr(measure_case, "time_case", time_case)
    monkeypatch.setattr(check, "base_tree", lambda rev, dest: Tree("base", REPO, resolve("HEAD")))
    monkeypatch.setattr(check, "intended", lambda root, revision: "c" * 12)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # the test process keeps its threads
    out = tmp_path / "out"
    # The base is the head's own folder, so the source is the same: --time-identical times it anyway, and the
    # stand-in timer's regression is read as this process's (--no-confirm: no fresh process to ask).
    status = cli.main(["HEAD", "-k", "norm/*/forward", "--no-callgrind", "--rounds", "6", "--honour-marker",
                       "--time-identical", "--no-confirm", "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 0
    first = ("**regression**: 1 of 2 cases regressed (1 signal: 1 time), 0 passed, 1 not judged; 0 of 1 group "
             "regressed, 0 passed, 1 not judged.")
    assert first in captured.out
    err = captured.err.splitlines()
    assert any(line.startswith("[1/2] norm/layernorm/forward: 1.100 [0.391, 11.851] not judged (about 492,494 rounds "
                               "would judge it) (") for line in err), err
    assert "blockbench regress: 1 of 2 cases regressed (1 signal: 1 time)" in err
    assert (f"blockbench regress: 1 of 2 cases regressed (1 signal: 1 time), intended by [perf-intended] in "
            f"{'c' * 12}: not failing") in err
    report = json.loads((out / report_files.REPORT_JSON).read_text())
    assert report["counts"]["regressed"] == 1 and report["counts"]["not_judged"] == 1
    assert report["counts"]["groups"] == {"groups": 1, "regressed": 0, "not_judged": 1, "not_confirmed": 0, "passed": 0}
    assert report["not_judged"] == [
        "not judged: norm/layernorm/forward: its 95% interval [0.391, 11.851] is wider than the check can use "
        "(wider than the 0.040 between 1 − 2% and 1 + 2%); about 492,494 rounds would judge it",
        "not judged: norm/*/forward (2 cases, 12 rounds pooled): its 95% interval [0.600, 3.000] is wider than the "
        "check can use (wider than the 0.040 between 1 − 2% and 1 + 2%); about 21,600 rounds per case would judge "
        "it"]
    assert (out / report_files.SUMMARY_MD).read_text() + "\n" in captured.out + "\n"


# --- 3. not judged: too wide to judge ---------------------------------------------------------------------------

@pytest.mark.parametrize("lo,hi,expected", [
    (0.391, 11.851, NOT_JUDGED),   # the new user's case: [0.391, 11.851] said "unchanged"
    (0.97, 1.03, NOT_JUDGED),      # 0.06 wide: cannot lie within 1 ± 2% wherever it is
    (0.985, 1.015, "unchanged"),   # within the band: unchanged within the threshold
    (1.01, 1.04, "unchanged"),     # narrow enough, across the edge: unchanged, as before (sequential rounds' case)
    (1.05, 11.8, "regression"),    # however wide, wholly past 1 + 2%: a regression
    (0.3, 0.97, "improvement"),
])
def test_an_interval_wider_than_the_band_between_the_edges_is_not_judged(lo, hi, expected):
    assert judge(Interval((lo + hi) / 2, lo, hi, 0.95), 0.02) == expected


def test_an_interval_as_wide_as_the_band_is_judged():
    assert judge(Interval(1.0, 0.75, 1.25, 0.95), 0.25) == "unchanged"  # exactly 2 x threshold wide
    assert judge(Interval(1.0, 0.75, 1.2500001, 0.95), 0.25) == NOT_JUDGED


def test_the_rounds_that_would_judge_scale_the_width_as_one_over_sqrt_rounds():
    # Twice the band's width needs four times the rounds; 1.5 times needs 2.25 times, up to a whole ABBA pair.
    assert rounds_to_judge(Interval(1.0, 0.96, 1.04, 0.95), 12, 0.02) == 48
    assert rounds_to_judge(Interval(1.0, 0.97, 1.03, 0.95), 12, 0.02) == 28
    assert rounds_to_judge(Interval(1.0, 0.391, 11.851, 0.95), 6, 0.02) == 492494


@pytest.mark.parametrize("n", [12, 24, 48])
def test_the_estimate_reaches_the_band_for_rounds_spread_as_measured(n):
    """Rounds at the quantiles of a normal spread (sd 5%, no sampling noise): at the estimated rounds the 95%
    order-statistic interval is about the band's width, 2 x 2%, as the 1/sqrt(rounds) rule says."""
    spread = NormalDist(1.0, 0.05)

    def ideal(rounds: int) -> list[float]:
        return [spread.inv_cdf((i + 0.5) / rounds) for i in range(rounds)]

    first = median_interval(ideal(n))
    assert first.hi - first.lo > 0.04 and judge(first, 0.02) == NOT_JUDGED
    enough = median_interval(ideal(rounds_to_judge(first, n, 0.02)))
    assert 0.8 * 0.04 <= enough.hi - enough.lo <= 1.05 * 0.04


def test_a_case_not_judged_is_neither_a_regression_nor_a_pass_and_says_so():
    cases = [row("block/llama2/decode", 0.391, 11.851), row("block/gpt2/forward", 0.99, 1.01)]
    report = report_of(cases)
    assert cases[0]["verdict"] == NOT_JUDGED and outcome_lines.regression_lines(report) == []
    n = case_counts.counts(report)
    assert (n["regressed"], n["passed"], n["not_judged"]) == (0, 1, 1)
    assert summary.headline(report) == "**no regression**: 0 of 2 cases regressed, 1 passed, 1 not judged."
    line = ("not judged: block/llama2/decode: its 95% interval [0.391, 11.851] is wider than the check can use "
            "(wider than the 0.040 between 1 − 2% and 1 + 2%); about 984,988 rounds would judge it")
    assert outcome_lines.not_judged_lines(report) == [line]
    text = summary.markdown(report)
    assert f"- {line}" in text and "| `block/llama2/decode` | 6.121 [0.391, 11.851] | not judged | 12 |" in text
    # Listed widest first: the case whose rounds say nothing leads those a little too wide.
    report["cases"].insert(0, row("block/gpt2/train", 0.97, 1.03))
    listed = [ln for ln in summary.markdown(report).splitlines() if ln.startswith("- not judged: ")]
    assert [ln.split(":")[1].strip() for ln in listed] == ["block/llama2/decode", "block/gpt2/train"]
    report["cases"].pop(0)
    assert "not judged when it is wider than the 0.040 between them and neither" in text
    # A row stored without its estimate (written by hand, or by an older check) is estimated from its interval.
    del cases[0]["rounds_to_judge"]
    assert outcome_lines.not_judged_lines(report) == [line]


def test_a_case_not_judged_on_time_whose_instructions_regressed_regressed():
    report = report_of([row("norm/rmsnorm/forward", 0.9, 1.2, cg=1.05)])
    assert report["cases"][0]["verdict"] == NOT_JUDGED
    n = case_counts.counts(report)
    assert (n["regressed"], n["not_judged"], n["signals"]) == (1, 0, {"time": 0, "instructions": 1})


def test_a_group_too_wide_to_judge_is_not_judged_with_rounds_per_case():
    rows = [{"name": f"norm/v{i}/forward", "ratios": [0.9, 1.1] * 6} for i in range(2)]
    (group,) = pooled_rows(rows, 0.02, 0.99)
    assert group["verdict"] == NOT_JUDGED and (group["lo"], group["hi"]) == (0.9, 1.1)
    # 24 pooled rounds x (0.2 / 0.04)^2 = 600 pooled, 300 per case.
    assert group["rounds_to_judge"] == 300
    report = report_of([], [group])
    assert outcome_lines.not_judged_lines(report) == [
        "not judged: norm/*/forward (2 cases, 24 rounds pooled): its 95% interval [0.900, 1.100] is wider than the "
        "check can use (wider than the 0.040 between 1 − 2% and 1 + 2%); about 300 rounds per case would judge it"]
    del group["rounds_to_judge"]  # estimated again from the interval, per case, as the check stores it
    assert outcome_lines.judging_rounds(group, report) == 300
    narrow = [{"name": f"norm/v{i}/forward", "ratios": [0.995, 1.005] * 6} for i in range(2)]
    assert pooled_rows(narrow, 0.02, 0.99)[0]["verdict"] == "unchanged"


def test_history_draws_runs_not_judged(tmp_path):
    for i, (lo, hi) in enumerate(((0.99, 1.01), (0.5, 2.0))):
        report = report_of([row("norm/rmsnorm/forward", lo, hi)])
        report.update(machine="cpu A, 2 cores, x86_64", time=f"2026-12-0{i + 1}T00:00:00+0000")
        report_files.write_all(report, {}, tmp_path / f"run{i}")
    table = history.history_table(tmp_path, "norm/rmsnorm/forward")
    assert list(table["verdict"]) == ["unchanged", NOT_JUDGED]
    png = history.history_figure(table, "norm/rmsnorm/forward", 2.0, tmp_path / "h.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
