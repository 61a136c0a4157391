"""Each component a point's choice swaps is timed alone beside its work, and where one that asks less of the machine
measures slower it is timed again compiled: the rows name the component, as a point's timing rows are written."""

from __future__ import annotations

import pytest
import torch

from ablations.config.checks import Shape
from ablations.measure.components_alone import build, component_work, forward_backward, measure_components, swapped
from ablations.measure.intervals import RoundsRule
from ablations.measure.timing import PairedTiming
from ablations.results.rows import Rows
from components import ArchConfig, FFNConfig, NormConfig
from tests.ablations.untimed import point_rows, untimed

SHAPE = Shape(2, 16)


def _arch(**groups) -> ArchConfig:
    from blockbench.testing import tiny

    return tiny(**groups).validate()


def _pair(ratio: float):
    return lambda a, b: PairedTiming([ratio * 1e-3] * 3, [1e-3] * 3)


def _components(arch: ArchConfig, base: ArchConfig, ratio: float) -> list[dict]:
    rows = Rows(base={"variant": "v"})
    measure_components(rows, arch, base, SHAPE, torch.device("cpu"), torch.float32, _pair(ratio), RoundsRule(3, 3),
                       None)
    return rows.rows


def test_the_components_swapped_are_the_choices_whose_module_differs_and_runs_alone():
    gpt2 = _arch()
    assert [c.group for c in swapped(_arch(norm=NormConfig("rmsnorm")), gpt2)] == ["norm"]
    both = _arch(norm=NormConfig("rmsnorm"), ffn=FFNConfig("swiglu"))
    assert sorted(c.group for c in swapped(both, gpt2)) == ["ffn", "norm"]
    assert swapped(gpt2, gpt2) == []


def test_a_component_that_asks_less_and_measures_slower_is_timed_again_compiled():
    rows = _components(_arch(norm=NormConfig("rmsnorm")), _arch(), ratio=3.6)
    by = {r["metric"]: r for r in rows}
    assert {r["component"] for r in rows} == {"norm"}
    assert by["component_latency_ratio"]["value"] == pytest.approx(3.6)
    assert "component_ratio_interval" in by
    assert by["component_bytes_ratio"]["value"] < 1  # RMSNorm reads one weight vector, LayerNorm two
    compiled = by["component_compiled_latency_ratio"]
    assert compiled["status"] == "skipped" or compiled["value"] == pytest.approx(3.6)


def test_a_component_measured_no_slower_is_not_compiled_again():
    rows = _components(_arch(norm=NormConfig("rmsnorm")), _arch(), ratio=0.9)
    assert not [r for r in rows if r["metric"].startswith("component_compiled_")]


def test_a_component_that_asks_more_is_not_compiled_again_however_slow():
    rows = _components(_arch(ffn=FFNConfig("swiglu")), _arch(), ratio=1.5)
    by = {r["metric"]: r for r in rows}
    assert by["component_flops_ratio"]["value"] > 0
    if by["component_flops_ratio"]["value"] > 1 or by["component_bytes_ratio"]["value"] > 1:
        assert "component_compiled_latency_ratio" not in by


def test_forward_backward_runs_the_component_as_training_does():
    part = build(swapped(_arch(norm=NormConfig("rmsnorm")), _arch())[0], _arch(norm=NormConfig("rmsnorm")), _arch(),
                 torch.device("cpu"), torch.float32)
    x = torch.randn(2, 16, _arch().model.d_model, requires_grad=True)
    forward_backward(part.variant, x, torch.randn_like(x))()
    assert x.grad is not None and part.variant.weight.grad is not None
    work = component_work(part.variant, _arch(norm=NormConfig("rmsnorm")), SHAPE, 4)
    assert work.bytes > 0


def test_a_norm_point_writes_its_component_rows(monkeypatch):
    untimed(monkeypatch)
    rows = point_rows("norm=rmsnorm")
    assert {r["metric"] for r in rows if r.get("component") == "norm"} >= {"component_latency_ratio",
                                                                           "component_bytes_ratio"}
    assert not [r for r in point_rows() if r.get("component")]  # the baseline swaps nothing


def test_a_decode_point_counts_the_operators_each_side_dispatches(monkeypatch):
    untimed(monkeypatch)
    rows = point_rows("attn=gqa")
    ops = {r["metric"]: r["value"] for r in rows if r["metric"] in ("decode_ops", "decode_baseline_ops")}
    assert set(ops) == {"decode_ops", "decode_baseline_ops"} and all(v > 0 and v == int(v) for v in ops.values())


def test_dispatched_ops_leaves_views_out():
    from ablations.measure.op_count import dispatched_ops

    x = torch.randn(4, 4)
    assert dispatched_ops(lambda: x.view(2, 8).t()) == 0
    assert dispatched_ops(lambda: (x @ x).relu()) == 2
