"""Paired, interleaved timing with ``torch.utils.benchmark``.

A ratio of two medians taken minutes apart carries every change of machine load in between. Here the
variant (A) and the baseline (B) alternate within one process, ABBA order round by round, so slow
drifts cancel in each round's A/B ratio; the headline is the median of those ratios with its spread.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.utils.benchmark import Timer


@dataclass(frozen=True)
class Summary:
    """Robust summary of repeated measurements: median with quartiles and extremes."""

    median: float
    p25: float
    p75: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Summary:
        if not values:
            raise ValueError("no measurements to summarise")
        if len(values) == 1:
            v = values[0]
            return cls(v, v, v, v, v, 1)
        q = statistics.quantiles(values, n=4, method="inclusive")
        return cls(statistics.median(values), q[0], q[2], min(values), max(values), len(values))


@dataclass(frozen=True)
class PairedTiming:
    """Per-round medians (seconds per call) of the variant ``a`` and the baseline ``b``."""

    a: list[float]
    b: list[float]
    # Per round: process CPU time / (wall time x threads). Near 1 when this process had the cores to
    # itself; well below 1 when another process took them (its rounds are the suspect ones). CPU only.
    cpu_share: list[float] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [x / y for x, y in zip(self.a, self.b, strict=True)]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timer(fn: Callable[[], object], label: str) -> Timer:
    # num_threads must be passed: Timer otherwise runs the statement single-threaded.
    return Timer(stmt="fn()", globals={"fn": fn}, label=label, num_threads=torch.get_num_threads())


def time_paired(
    fn_a: Callable[[], object],
    fn_b: Callable[[], object],
    *,
    rounds: int,
    min_run_time: float,
    warmup: int,
    device: torch.device,
) -> PairedTiming:
    """Time ``fn_a`` and ``fn_b`` interleaved; each round gives each a ``blocked_autorange`` median.

    ``Timer`` synchronises CUDA itself around each block, so kernels are counted to completion.
    """
    for fn in (fn_a, fn_b):
        for _ in range(warmup):
            fn()
        synchronize(device)
    timers = (_timer(fn_a, "a"), _timer(fn_b, "b"))
    a: list[float] = []
    b: list[float] = []
    share: list[float] = []
    threads = torch.get_num_threads()
    for r in range(rounds):
        # ABBA: the first timer of a round is not always the same one, so ordering effects cancel.
        order = (0, 1) if r % 2 == 0 else (1, 0)
        wall, cpu = time.perf_counter(), time.process_time()
        for i in order:
            m = timers[i].blocked_autorange(min_run_time=min_run_time)
            (a if i == 0 else b).append(m.median)
        if device.type == "cpu":
            share.append((time.process_time() - cpu) / ((time.perf_counter() - wall) * threads))
    return PairedTiming(a, b, share)


def time_one(fn: Callable[[], object], *, rounds: int, min_run_time: float, warmup: int,
             device: torch.device) -> Summary:
    """Unpaired timing (for things with no baseline, such as the matmul peak)."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    timer = _timer(fn, "one")
    return Summary.of([timer.blocked_autorange(min_run_time=min_run_time).median for _ in range(rounds)])
