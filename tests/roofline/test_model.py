"""The roofline, the calibrated prediction and the kernel count."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from ablations.roofline import calls
from ablations.roofline.hardware import Hardware
from ablations.roofline.time_model import predict, roofline_bound, roofline_time
from ablations.roofline.work import Work
from blockbench import Work as Elements
from components import ArchConfig, AttnConfig, ModelConfig, PosConfig

# At 2 bytes an element: 100 B of weights, 20 B of norms, 30 B of KV read and 10 B written.
WORK = Work(Elements(linear_flops=600, attention_flops=400, weights=50, norm_activations=10, kv_read=15, kv_write=5),
            tokens=4, elem=2)


def hardware(**change: object) -> Hardware:
    base = dict(name="test", peak_flops=100.0, bandwidth=10.0, memory_bytes=1e9, call_overhead=0.5,
                overlapped_calls=False, matmul_efficiency=[[1, 0.5]], memory_efficiency=1.0,
                attention_memory_efficiency=1.0, attention_compute_efficiency=1.0, dtype="float32",
                source="made up", efficiency_source="made up")
    return Hardware(**{**base, **change})


def test_roofline_is_the_larger_of_compute_and_memory():
    assert WORK.flops == 1000 and WORK.bytes == 160
    assert roofline_time(WORK, 100.0, 10.0) == 16.0 and roofline_bound(WORK, 100.0, 10.0) == "memory"
    assert roofline_time(WORK, 10.0, 100.0) == 100.0 and roofline_bound(WORK, 10.0, 100.0) == "compute"


def test_prediction_sums_parts_each_at_its_own_bound():
    # Linear: 600 / (100 x 0.5) = 12 s compute vs 100 / 10 = 10 s memory -> 12 compute. Attention: 400 / 100 =
    # 4 s vs 40 / 10 = 4 s -> compute (ties go to compute). Norms 2 s memory. Overhead 3 calls x 0.5 s.
    p = predict(WORK, hardware(), calls=3)
    assert (p.compute_s, p.memory_s, p.overhead_s) == (16.0, 2.0, 1.5)
    assert p.seconds == 19.5 and p.bound == "compute"
    gpu = predict(WORK, hardware(overlapped_calls=True), calls=3)
    assert gpu.seconds == 18.0
    assert predict(WORK, hardware(overlapped_calls=True), calls=100).bound == "per-call overhead"
    slow_memory = predict(WORK, hardware(memory_efficiency=0.1, attention_memory_efficiency=0.1), calls=0)
    assert slow_memory.bound == "memory" and slow_memory.memory_s == 100 + 40 + 20


def test_attention_that_does_not_overlap_adds_its_compute_and_memory():
    # As above, but attention's 4 s of products and 4 s of cache reads follow each other (a CPU core): 8 s.
    p = predict(WORK, hardware(attention_overlapped=False), calls=3)
    assert (p.compute_s, p.memory_s, p.overhead_s) == (16.0, 6.0, 1.5)
    assert p.seconds == 23.5
    slow_flops = predict(WORK, hardware(attention_compute_efficiency=0.5), calls=0)  # overlapped: 8 s, compute
    assert slow_flops.compute_s == 12.0 + 8.0 and slow_flops.memory_s == 2.0


def test_the_serial_attention_fit_recovers_both_efficiencies(monkeypatch):
    from ablations.measure import calibration
    from ablations.measure.ceilings import Ceilings
    from ablations.measure.kv_streams import cache_bytes

    ceilings = Ceilings(matmul_peak=100e9, copy_bandwidth=10e9, read_bandwidth=20e9, call_overhead=1e-6)
    e_mem, e_flops = 0.4, 0.6
    flops = 4 * calibration.BATCH * calibration.HEADS * calibration.CONTEXT * calibration.HEAD_DIM

    def one_cache(span, batch, kv_heads, context, head_dim, dtype):  # shapes only: never read
        return [(torch.empty(batch, kv_heads, context, head_dim, dtype=dtype),) * 2]

    # Each "step" is its cache, and its time the serial model's for that cache, so the fit must give back both.
    monkeypatch.setattr(calibration, "caches_spanning", one_cache)
    monkeypatch.setattr(calibration, "cycled_step", lambda path, q, caches, start: caches[0])
    monkeypatch.setattr(calibration, "_best", lambda cache, **timed: flops / (100e9 * e_flops)
                        + cache_bytes(cache) / (20e9 * e_mem))
    assert calibration.attention_efficiency(ceilings, torch.float32, span_bytes=0) == pytest.approx((e_mem, e_flops))
    # Noise that makes GQA-2's step as slow as MHA's leaves nothing to fit: each step alone at its own bound.
    monkeypatch.setattr(calibration, "_best", lambda cache, **timed: 0.01)
    mha_bytes = 2 * calibration.BATCH * calibration.HEADS * calibration.CONTEXT * calibration.HEAD_DIM * 4
    assert calibration.attention_efficiency(ceilings, torch.float32, span_bytes=0) == pytest.approx(
        (mha_bytes / 0.01 / 20e9, flops / 0.01 / 100e9))


def test_matmul_efficiency_interpolates_in_log_rows():
    hw = hardware(matmul_efficiency=[[1, 0.1], [100, 0.5], [10000, 0.9]])
    assert hw.matmul_fraction(1) == 0.1 and hw.matmul_fraction(10) == pytest.approx(0.3)
    assert hw.matmul_fraction(0) == 0.1 and hw.matmul_fraction(10**6) == 0.9


@pytest.mark.parametrize("mode", ["forward", "train", "decode", "prefill"])
@pytest.mark.parametrize("arch", [ArchConfig(ModelConfig(d_model=16, n_layers=3, n_heads=4, max_seq_len=16)),
                                  ArchConfig(ModelConfig(d_model=16, n_layers=3, n_heads=4, max_seq_len=16),
                                             pos=PosConfig("rope"), attn=AttnConfig("gqa", 2))])
def test_kernel_calls_extrapolate_to_the_counted_deep_model(mode, arch):
    # Counted from 1- and 2-layer replicas; a 3-layer model counted directly must agree.
    assert calls.kernel_calls(arch, mode) == calls._count(arch, mode)
    deeper = arch.replace(model=dataclasses.replace(arch.model, n_layers=4))
    assert calls.kernel_calls(deeper, mode) > calls.kernel_calls(arch, mode)


def test_kernel_count_ignores_views():
    counter = calls._OpCounter()
    x = torch.randn(4, 4)
    with counter:
        x.view(16).transpose(0, 0)
        torch.add(x, x)
    assert counter.count == 1


def test_every_shipped_hardware_entry_loads_with_numbers():
    # PyYAML reads the datasheets' 989.0e12 as a string; a prediction from it would fail at its first division.
    from ablations.cli import CONF_DIR
    from ablations.roofline.hardware import load_hardware

    names = sorted(p.stem for p in (CONF_DIR / "hardware").glob("*.yaml"))
    assert names
    for name in names:
        hw = load_hardware(name)
        assert all(isinstance(getattr(hw, f), float) and getattr(hw, f) > 0
                   for f in ("peak_flops", "bandwidth", "memory_bytes", "call_overhead")), name
