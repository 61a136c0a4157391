"""Paired, interleaved timing.

A ratio of two medians taken minutes apart carries every change of machine load in between. Here the
variant (A) and the baseline (B) alternate within one process, ABBA order round by round, so slow
drifts cancel in each round's A/B ratio; the headline is the median of those ratios with its spread.

Each round times blocks of calls, synchronised on CUDA around each block and with the garbage collector off
inside it, as ``torch.utils.benchmark.Timer`` does; the block size is fixed once per measurement (``_measure``
says why Timer's per-call sizing is not used per round).
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ablations.results.rows import Summary


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


def time_call(fn: Callable[[], object], device: torch.device,
              clock: Callable[[], float] = time.perf_counter) -> tuple[object, float]:
    """One call of ``fn``, synchronised on both sides: its result and the seconds it took.

    For calls far longer than a timer's overhead: the first (compiling) call, warm-up, and rounds of a
    call that alone outlasts ``min_run_time``.
    """
    synchronize(device)
    start = clock()
    out = fn()
    synchronize(device)
    return out, clock() - start


def _warm(fn: Callable[[], object], warmup: int, device: torch.device,
          clock: Callable[[], float] = time.perf_counter) -> float:
    """Run ``fn`` ``warmup`` times (at least once); the seconds its last call took, on the rounds' own clock."""
    return [time_call(fn, device, clock)[1] for _ in range(max(1, warmup))][-1]


def block_size(call_seconds: float) -> int:
    """Calls per timed block: enough that the clock's own cost (about a microsecond, ``Timer``'s 1e-4 bound
    on it) stays under 0.01% of the block, and no more, so a round holds as many blocks as it can."""
    return max(1, math.ceil(1e-2 / max(call_seconds, 1e-9)))


def _block(fn: Callable[[], object], number: int, device: torch.device, clock: Callable[[], float]) -> float:
    # As timeit does: a collection that lands inside a block is the interpreter's cost, not the call's.
    collecting = gc.isenabled()
    gc.disable()
    try:
        synchronize(device)
        start = clock()
        for _ in range(number):
            fn()
        synchronize(device)
        return (clock() - start) / number
    finally:
        if collecting:
            gc.enable()


def _measure(fn: Callable[[], object], number: int, min_run_time: float, device: torch.device,
             statistic: str = "median", clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call for one round: blocks of ``number`` calls (``block_size``, fixed at warm-up) until
    ``min_run_time`` is spent, summarised by ``statistic``.

    The block size is sized once per measurement, not per round: ``Timer.blocked_autorange`` sizes it afresh on
    every call by running the statement first at one call and then at ten, which for a decode step of a few
    milliseconds runs several times the calls asked for. A call that alone outlasts ``min_run_time`` is
    one block of one call (two under ``min``: the faster of two).

    ``statistic="min"`` takes the fastest block of the round instead of the median block: on a loaded machine
    another process only ever adds time, so the least a side took is the steadiest figure of its own cost,
    where the median carries whatever preemption hit.
    """
    times: list[float] = []
    while not times or sum(times) * number < min_run_time or (statistic == "min" and len(times) < 2):
        times.append(_block(fn, number, device, clock))
    return min(times) if statistic == "min" else statistics.median(times)


def time_paired(
    fn_a: Callable[[], object],
    fn_b: Callable[[], object],
    *,
    rounds: int,
    min_run_time: float,
    warmup: int,
    device: torch.device,
    prepare: Callable[[tuple[int, int]], None] | None = None,
    statistic: str = "median",
    clock: Callable[[], float] = time.perf_counter,
    until: Callable[[list[float]], bool] | None = None,
) -> PairedTiming:
    """Time ``fn_a`` and ``fn_b`` interleaved; each round gives each a median over ``min_run_time``.

    Each block is synchronised on CUDA, so kernels are counted to completion.
    ``prepare(order)``, when given, runs before each round (and before the warm-up) with that round's
    order, (0, 1) = a first: it rebuilds state the two callables read, such as their KV caches, so that
    where that state lands in memory is drawn afresh every round instead of once for the whole run.
    ``statistic`` is each round's figure per side: ``median`` (the harness) or ``min`` (see ``_measure``).
    ``clock`` is what a second is: wall time (the harness), or ``time.thread_time``, the CPU time of this
    thread, which time spent descheduled by another process does not reach (one torch thread only).
    ``until(ratios)``, when given, is asked after every round and ends the run early when it says so: ``rounds``
    is then the budget (``ablations.measure.intervals.RoundsRule.done`` is the rule that keeps the interval's
    coverage under such stopping).
    """
    if prepare is not None:
        prepare((0, 1))
    fns = (fn_a, fn_b)
    numbers = [block_size(_warm(fn, warmup, device, clock)) for fn in fns]
    a: list[float] = []
    b: list[float] = []
    share: list[float] = []
    threads = torch.get_num_threads()
    for r in range(rounds):
        # ABBA: the first timer of a round is not always the same one, so ordering effects cancel.
        order = (0, 1) if r % 2 == 0 else (1, 0)
        if prepare is not None:
            prepare(order)
        wall, cpu = time.perf_counter(), time.process_time()
        for i in order:
            (a if i == 0 else b).append(_measure(fns[i], numbers[i], min_run_time, device, statistic, clock))
        if device.type == "cpu":
            share.append((time.process_time() - cpu) / ((time.perf_counter() - wall) * threads))
        if until is not None and until([x / y for x, y in zip(a, b, strict=True)]):
            break
    return PairedTiming(a, b, share)


def time_one(fn: Callable[[], object], *, rounds: int, min_run_time: float, warmup: int,
             device: torch.device) -> Summary:
    """Unpaired timing (for things with no baseline, such as the matmul peak)."""
    number = block_size(_warm(fn, warmup, device))
    return Summary.of([_measure(fn, number, min_run_time, device) for _ in range(rounds)])
