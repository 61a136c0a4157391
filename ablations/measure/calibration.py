"""This machine's ceilings and the efficiencies its kernels reach, for the performance model (``roofline``).

Efficiencies are measured on the shapes the harness times (d=1024, 16 heads of 64), each against this run's
own ceilings (``ceilings.measure_ceilings``: each the best of several measurements), best round:

- matrix products with N rows (a d x 4d weight, cycled over four copies so the weights come from memory as a
  model's do, not from the last-level cache): FLOP/s / peak at each N;
- weight streaming: the best bytes/s of those products (at N=1 a product is a weight read) / bandwidth;
- attention: MHA's decode attention (batch 4, context 4096, the SDPA reference) and the folded GQA-2 step,
  the same FLOPs on 8x fewer bytes, fitted to compute-then-memory time (``attention_efficiency``): a fraction of
  bandwidth for the KV bytes and one of peak for the products; each call reads the next of caches spanning
  twice the bandwidth buffer, from memory as a model's layers do;
- per-call overhead as a model pays it: a decode step of a tiny one-layer decoder / its kernel count.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import torch

from ablations.measure.ceilings import Ceilings, measure_ceilings
from ablations.measure.kv_streams import cache_bytes, caches_spanning, cycled_step, decode_attention_flops
from ablations.measure.timing import time_one
from ablations.roofline.calls import kernel_calls
from components import ArchConfig, ModelConfig, build_decoder
from components.kernels import folded_sdpa, reference_sdpa

ROWS = (1, 4, 16, 64, 256, 1024, 4096)
D_MODEL, HEADS, HEAD_DIM, BATCH, CONTEXT = 1024, 16, 64, 4, 4096


def _best(fn: object, **timed: object) -> float:
    return time_one(fn, **timed).min


def matmul_efficiency(ceilings: Ceilings, dtype: torch.dtype, **timed: object) -> tuple[list[list[float]], float]:
    """([[N, fraction of peak], ...], best weight bytes/s as a fraction of bandwidth)."""
    weights = [torch.randn(D_MODEL, 4 * D_MODEL, dtype=dtype) for _ in range(4)]
    table, streaming = [], 0.0
    for n in ROWS:
        x = torch.randn(n, D_MODEL, dtype=dtype)
        seconds = _best(lambda x=x: [x @ w for w in weights], **timed)
        flops = 2 * n * D_MODEL * 4 * D_MODEL * len(weights)
        table.append([n, round(min(1.0, flops / seconds / ceilings.matmul_peak), 4)])
        streaming = max(streaming, sum(w.nbytes for w in weights) / seconds)
    return table, min(1.0, streaming / ceilings.bandwidth)


def attention_efficiency(ceilings: Ceilings, dtype: torch.dtype, span_bytes: int,
                         **timed: object) -> tuple[float, float]:
    """(fraction of bandwidth reading the KV cache, fraction of peak in attention's products), fitted to a CPU
    core's serial attention: time = FLOPs / (peak x e_flops) + KV bytes / (bandwidth x e_mem).

    MHA's and the folded GQA-2's decode steps do the same FLOPs on KV caches 8x apart, so the difference of
    their times is the extra bytes' alone (e_mem) and what GQA-2 has left after its bytes is the FLOPs' (e_flops).
    Each step reads the next of caches spanning ``span_bytes`` (``kv_streams``): GQA-2's 16 MiB cache alone
    would come from the last-level cache. A time difference the noise swallowed falls back to each step alone
    at its own bound (MHA's bytes, GQA-2's FLOPs), the overlapped model's reading."""
    q = torch.randn(BATCH, HEADS, 1, HEAD_DIM, dtype=dtype)
    flops = decode_attention_flops(BATCH, HEADS, CONTEXT, HEAD_DIM)
    seconds, nbytes = [], []
    for kv, path in ((HEADS, reference_sdpa), (2, folded_sdpa)):
        caches = caches_spanning(span_bytes, BATCH, kv, CONTEXT, HEAD_DIM, dtype)
        seconds.append(_best(cycled_step(path, q, caches, CONTEXT - 1), **timed))
        nbytes.append(cache_bytes(caches[0]))
    (t_mha, t_gqa), (b_mha, b_gqa) = seconds, nbytes
    per_byte = (t_mha - t_gqa) / (b_mha - b_gqa)
    flops_s = t_gqa - b_gqa * per_byte
    if per_byte <= 0 or flops_s <= 0:
        return min(1.0, b_mha / t_mha / ceilings.bandwidth), min(1.0, flops / t_gqa / ceilings.matmul_peak)
    return min(1.0, 1 / per_byte / ceilings.bandwidth), min(1.0, flops / flops_s / ceilings.matmul_peak)


def per_call_overhead(dtype: torch.dtype, **timed: object) -> float:
    arch = ArchConfig(ModelConfig(d_model=64, n_layers=1, n_heads=4, max_seq_len=32))
    model = build_decoder(arch, dtype=dtype)
    cache = model.new_cache(1, 17)
    x = torch.randn(1, 1, 64, dtype=dtype)

    def step() -> None:
        cache.pos = 16
        with torch.inference_mode():
            model(x, cache)

    return _best(step, **timed) / kernel_calls(arch, "decode")


# The hardware entry this machine's calibration is: ``blockbench calibrate`` writes it, the report validates with it.
MACHINE = "this_machine"


def calibrate(dtype: torch.dtype = torch.float32, rounds: int = 5, min_run_time: float = 0.1,
              buffer_mib: int = 256, matmul_n: int = 2048) -> dict:
    """The ``hardware`` entry for this machine, every figure measured now."""
    cpu = torch.device("cpu")
    timed = dict(rounds=rounds, min_run_time=min_run_time, warmup=2, device=cpu)
    ceilings = measure_ceilings(dtype, matmul_n, buffer_mib << 20, **timed)
    matmul, streaming = matmul_efficiency(ceilings, dtype, **timed)
    attention_memory, attention_compute = attention_efficiency(ceilings, dtype, 2 * (buffer_mib << 20), **timed)
    return {
        "name": MACHINE,
        "dtype": str(dtype).removeprefix("torch."),
        "peak_flops": float(ceilings.matmul_peak),
        "bandwidth": float(ceilings.bandwidth),
        "memory_bytes": float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")),
        "call_overhead": float(per_call_overhead(dtype, **timed)),
        "overlapped_calls": False,
        "attention_overlapped": False,
        "matmul_efficiency": matmul,
        "memory_efficiency": round(streaming, 4),
        "attention_memory_efficiency": round(attention_memory, 4),
        "attention_compute_efficiency": round(attention_compute, 4),
        "source": f"measured by python -m ablations.predict.calibrate on {platform.node()} ({_cpu_name()}, "
                  f"{torch.get_num_threads()} threads, torch {torch.__version__}) at "
                  f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}",
        "efficiency_source": "calibrated on this machine (python -m ablations.predict.calibrate)",
        "measured": {"copy_bandwidth": float(ceilings.copy_bandwidth), "read_bandwidth": float(ceilings.read_bandwidth),
                     "add_call": float(ceilings.call_overhead), "matmul_n": matmul_n, "buffer_mib": buffer_mib,
                     "threads": torch.get_num_threads(), "rounds": rounds},
    }


def _cpu_name() -> str:
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
                platform.processor() or "unknown CPU")
