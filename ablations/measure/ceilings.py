"""What this machine can do at best, measured in every run: matmul peak, memory bandwidth, per-call cost.

Each is the best round (a ceiling is what the hardware can do, not what a noisy neighbour left over):

- matmul peak: an N x N @ N x N product in the run's dtype, 2 N^3 FLOPs;
- memory bandwidth, STREAM-style over a buffer far past the last-level cache: *copy* moves 2 x its bytes
  (read and write, as STREAM counts it), *read* (a sum, compute-light) moves its bytes once; the roofline
  uses the larger, the best the memory system showed;
- call overhead: one elementwise add on one-element tensors, the fixed cost of a kernel call (Python,
  dispatch and, on a GPU, the launch) that no byte or FLOP explains.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ablations.measure.timing import time_one


@dataclass(frozen=True)
class Ceilings:
    matmul_peak: float  # FLOP/s
    copy_bandwidth: float  # bytes/s
    read_bandwidth: float  # bytes/s
    call_overhead: float  # s

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
                     **timed: object) -> Ceilings:
    """``timed``: ``time_one``'s rounds, min_run_time and warmup."""
    copy, read = bandwidths(buffer_bytes, device, dtype, **timed)
    return Ceilings(matmul_peak(matmul_n, device, dtype, **timed), copy, read, call_overhead(device, dtype, **timed))
