"""Machine ceilings (what each figure counts) and the SDPA backend record."""

from __future__ import annotations

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from ablations.measure import ceilings
from ablations.measure.backends import sdpa_backends
from ablations.results.rows import Summary
from components import ArchConfig, AttnConfig, ModelConfig, build_decoder

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
