"""Machine ceilings (what each figure counts) and the SDPA backend record."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from ablations.measure import ceilings
from ablations.measure.backends import sdpa_backends
from ablations.results.rows import Summary
from components import ArchConfig, AttnConfig, ModelConfig, build_decoder
from tests.ablations.untimed import point_rows, untimed

CPU = torch.device("cpu")


def test_bandwidths_count_copy_as_read_plus_write(monkeypatch):
    monkeypatch.setattr(ceilings, "time_one", lambda fn, **kw: (fn(), Summary.of([2.0, 0.5]))[1])
    copy, read = ceilings.bandwidths(1 << 20, CPU, torch.float32, rounds=1, min_run_time=0.0, warmup=1)
    assert copy == 2 * (1 << 20) / 0.5 and read == (1 << 20) / 0.5  # the best round
    peak = ceilings.matmul_peak(8, CPU, torch.float32, rounds=1, min_run_time=0.0, warmup=1)
    assert peak == 2 * 8**3 / 0.5
    found = ceilings.measure_ceilings(torch.float32, 8, 1 << 10, device=CPU, rounds=1, min_run_time=0.0, warmup=1)
    assert found.bandwidth == max(found.copy_bandwidth, found.read_bandwidth) and found.call_overhead == 0.5


def test_sdpa_backend_is_recorded_per_call_in_every_mode():
    model = build_decoder(ArchConfig(ModelConfig(d_model=32, n_layers=2, n_heads=4), attn=AttnConfig("gqa", 2)))
    x = torch.randn(2, 6, 32)
    assert sdpa_backends(lambda: model(x)) == {"flash": 2}
    with sdpa_kernel(SDPBackend.MATH):
        assert sdpa_backends(lambda: model(x)) == {"math": 2}
    cache = model.new_cache(2, 8)
    cache.pos = 6
    with torch.inference_mode():  # aten operators below SDPA are invisible to dispatch modes here
        assert sdpa_backends(lambda: model(x[:, :1], cache)) == {"flash": 2}


def test_each_ceiling_is_the_best_of_several_measurements_taken_in_turn(monkeypatch):
    order: list[str] = []
    peaks = iter([150e9, 91e9, 176e9, 130e9, 160e9])  # one slow spell: 91 GFLOP/s alone would give 118% and more
    bandwidths = iter([(8e9, 9e9), (10e9, 7e9), (6e9, 6e9)])
    overheads = iter([3e-6, 2e-6, 4e-6])
    monkeypatch.setattr(ceilings, "matmul_peak", lambda *a, **kw: (order.append("peak"), next(peaks))[1])
    monkeypatch.setattr(ceilings, "bandwidths", lambda *a, **kw: (order.append("bw"), next(bandwidths))[1])
    monkeypatch.setattr(ceilings, "call_overhead", lambda *a, **kw: (order.append("call"), next(overheads))[1])
    found = ceilings.measure_ceilings(torch.float32, 8, 1 << 10, device=CPU, measurements=3, rounds=1)
    assert order == ["peak", "bw", "call"] * 3  # in turn: a slow spell spoils one of each, not one ceiling
    assert found.matmul_peak == 176e9 and found.matmul_peaks == (150e9, 91e9, 176e9)
    assert (found.copy_bandwidth, found.read_bandwidth, found.call_overhead) == (10e9, 9e9, 2e-6)


def test_a_run_measures_its_ceilings_once_and_every_point_carries_them(monkeypatch):
    """Two points of one run, nothing timed: one measurement of the ceilings, the same ``matmul_peak`` row on both,
    and each utilisation over that peak."""
    measured = []

    def measure(*args: object, **kw: object) -> ceilings.Ceilings:
        measured.append(args)
        return ceilings.Ceilings(1e11, 8e9, 9e9, 2e-6, (9.1e10, 1e11))

    monkeypatch.setattr(ceilings, "measure_ceilings", measure)
    untimed(monkeypatch)
    quick = ("profile.decode=false", "profile.memory=false", "profile.train_step=false", "profile.shapes=[1x8]")
    ceilings.forget_run()
    for variant in ("gpt2", "rmsnorm"):
        rows = {(r["metric"], r["mode"]): r for r in point_rows(*quick, variant=variant)}
        peak = rows[("matmul_peak", "512x512@512x512")]
        assert (peak["value"], peak["min"], peak["max"], peak["n"]) == (1e11, 9.1e10, 1e11, 2)
        flop_rate = rows[("flop_rate", "forward")]["value"]
        assert rows[("utilisation", "forward")]["value"] == pytest.approx(flop_rate / 1e11)
    assert len(measured) == 1
    ceilings.forget_run()  # a new run measures again
    point_rows(*quick)
    assert len(measured) == 2
    ceilings.forget_run()
