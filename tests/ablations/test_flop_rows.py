"""A point's FLOP rows: the design's work (``flops``) in every mode, and beside it the executed (``executed_flops``)
wherever the kernels compute more: a sliding window's design attends to min(keys, W) keys a query, while its dense
masked kernel scores every key the step holds. Nothing is timed (``tests.ablations.untimed``)."""

from __future__ import annotations

import pytest

from ablations.config.checks import check_run
from ablations.measure.work_rows import add_flop_rows
from ablations.results.rows import Rows, Summary
from ablations.roofline.work import mode_work
from tests.ablations.untimed import LATENCY, point_rows, untimed
from tests.quality.helpers import composed

QUICK = ("profile.memory=false", "profile.shapes=[1x8]", "profile.decode_contexts=[16]",
         "profile.decode_batch_sizes=[1]")


def test_the_executed_flops_sit_beside_the_designs_only_where_they_differ():
    rows = Rows(base={})
    add_flop_rows(rows, "prefill", None, 100, 100, "analytic", Summary.of([0.5]), 1000.0)
    add_flop_rows(rows, "forward", None, 100, 160, "exact", Summary.of([0.5]), 1000.0)
    got = [(r["mode"], r["metric"], r["value"], r["statistic"]) for r in rows.rows]
    assert got == [("prefill", "flops", 100, "analytic"), ("prefill", "flop_rate", 200.0, "median"),
                   ("prefill", "utilisation", 0.2, "median"),
                   ("forward", "flops", 100, "analytic"), ("forward", "executed_flops", 160, "exact"),
                   ("forward", "flop_rate", 320.0, "median"), ("forward", "utilisation", 0.32, "median")]


def test_a_windowed_point_reports_the_designs_and_the_executed_work(monkeypatch):
    untimed(monkeypatch)
    windowed = (*QUICK, "attn.window=4")
    arch = check_run(composed(*windowed))
    got = {(r["metric"], r["mode"]): r["value"] for r in point_rows(*windowed)}
    for mode, batch, seq in (("forward", 1, 8), ("train", 1, 8), ("prefill", 1, 16), ("decode", 1, 16)):
        work = mode_work(arch, mode, batch, seq)
        assert got[("flops", mode)] == work.flops
        # Forward and train: torch's counter saw the executed work; prefill and decode: the work model states it.
        assert got.get(("executed_flops", mode), work.flops) == work.executed_flops
        # The rate is what the machine did: the executed work over the (stand-in) time.
        assert got[("flop_rate", mode)] == pytest.approx(work.executed_flops / LATENCY)
    # 8 and 16 tokens under a window of 4: some query loses keys to it, so the two counts differ...
    assert all(("executed_flops", mode) in got for mode in ("forward", "train", "prefill"))
    # ...while a decode step reads only the window's keys through its rolling cache: one count, design and executed.
    assert ("executed_flops", "decode") not in got
    assert not any(r["metric"] == "executed_flops" for r in point_rows(*QUICK))  # no window: nothing hidden
