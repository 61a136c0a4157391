"""What this machine can do at best, measured in every run: matmul peak, memory bandwidth, per-call cost.

Each measurement is its best round (a ceiling is what the hardware can do, not what a noisy neighbour left over),
and each ceiling the best of ``MEASUREMENTS`` measurements taken in turn (peak, bandwidths, overhead, then again),
so a slow spell spoils one of them, not the ceiling:

- matmul peak: an N x N @ N x N product in the run's dtype, 2 N^3 FLOPs;
- memory bandwidth, STREAM-style over a buffer far past the last-level cache: *copy* moves 2 x its bytes
  (read and write, as STREAM counts it), *read* (a sum, compute-light) moves its bytes once; the roofline
  uses the larger, the best the memory system showed;
- call overhead: one elementwise add on one-element tensors, the fixed cost of a kernel call (Python,
  dispatch and, on a GPU, the launch) that no byte or FLOP explains.

A sweep measures them once per run (``run_ceilings``), at its first timed point, and every point's rows carry the
same figures, so one slow reading cannot put a single point's utilisation above 1. A utilisation above 1
still means the ceiling was under-measured, and the report says so (``ablations.report.formatting.fmt_util``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ablations.measure.timing import time_one

# Measurements each ceiling is the best of.
MEASUREMENTS = 5


@dataclass(frozen=True)
class Ceilings:
    matmul_peak: float  # FLOP/s
    copy_bandwidth: float  # bytes/s
    read_bandwidth: float  # bytes/s
    call_overhead: float  # s
    # Every measurement of the matmul peak, the best of which is ``matmul_peak``: how far one alone could be off.
    matmul_peaks: tuple[float, ...] = ()

    @property
    def bandwidth(self) -> float:
        return max(self.copy_bandwidth, self.read_bandwidth)


def matmul_peak(n: int, device: torch.device, dtype: torch.dtype, **timed: object) -> float:
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return 2 * n**3 / time_one(lambda: a @ b, device=device, **timed).min


def bandwidths(buffer_bytes: int, device: torch.device, dtype: torch.dtype, **timed: object) -> tuple[float, float]:
    """(copy, read) bytes/s over ``buffer_bytes``-sized buffers."""
    elem = torch.empty((), dtype=dtype).element_size()
    src = torch.randn(buffer_bytes // elem, device=device, dtype=dtype)
    dst = torch.empty_like(src)
    copy = 2 * src.nbytes / time_one(lambda: dst.copy_(src), device=device, **timed).min
    read = src.nbytes / time_one(lambda: src.sum(), device=device, **timed).min
    return copy, read


def call_overhead(device: torch.device, dtype: torch.dtype, **timed: object) -> float:
    a = torch.ones(1, device=device, dtype=dtype)
    out = torch.empty_like(a)
    return time_one(lambda: torch.add(a, a, out=out), device=device, **timed).min


def measure_ceilings(dtype: torch.dtype, matmul_n: int, buffer_bytes: int, *, device: torch.device,
                     measurements: int = MEASUREMENTS, **timed: object) -> Ceilings:
    """Each ceiling the best of ``measurements`` measurements, taken in turn; ``timed``: ``time_one``'s rounds,
    min_run_time and warmup."""
    peaks, copies, reads, overheads = [], [], [], []
    for _ in range(measurements):
        peaks.append(matmul_peak(matmul_n, device, dtype, **timed))
        copy, read = bandwidths(buffer_bytes, device, dtype, **timed)
        copies.append(copy)
        reads.append(read)
        overheads.append(call_overhead(device, dtype, **timed))
    return Ceilings(max(peaks), max(copies), max(reads), min(overheads), tuple(peaks))


_RUN: dict[tuple, Ceilings] = {}


def run_ceilings(dtype: torch.dtype, matmul_n: int, buffer_bytes: int, *, device: torch.device,
                 **timed: object) -> Ceilings:
    """The run's ceilings: measured at the first call with these settings, the same figures for every later point
    of the run (``forget_run`` starts a new run)."""
    key = (str(device), dtype, matmul_n, buffer_bytes, tuple(sorted(timed.items())))
    if key not in _RUN:
        _RUN[key] = measure_ceilings(dtype, matmul_n, buffer_bytes, device=device, **timed)
    return _RUN[key]


def forget_run() -> None:
    """A new run measures its own ceilings (a command's start; tests that want a fresh measurement)."""
    _RUN.clear()
