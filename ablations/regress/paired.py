"""Base and head timed paired and interleaved, round by round, and a verdict from the rounds' ratios.

Each round times both sides back to back (ABBA across rounds, ``ablations.measure.timing.time_paired``)
after renewing both sides' memory in that round's order, so load and placement move both and cancel in
the round's head/base ratio. The headline is the median of those ratios with a distribution-free interval
(order statistics of the binomial, ``scipy.stats.binom``): no normality assumed, and one round that a
neighbour process spoiled moves it by at most one rank.

One check asks the same question of every case, so the 95% is family-wise: each case's interval is at
1 - 0.05 / cases (Bonferroni). At 95% per case, 48 cases of identical code gave a false alarm in two of
twenty runs here (a memory-bound decode step whose rounds moved by ±20% beside other jobs).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from ablations.measure.intervals import CONFIDENCE, Interval
from ablations.measure.timing import PairedTiming, time_paired
from ablations.regress.cases import Subject


def case_confidence(cases: int, confidence: float = CONFIDENCE) -> float:
    """Each case's level so that all ``cases`` intervals hold together with ``confidence`` (Bonferroni)."""
    return 1 - (1 - confidence) / max(1, cases)


def verdict(interval: Interval, threshold: float) -> str:
    """``regression`` when even the interval's low end is past 1 + threshold, ``improvement`` when even its
    high end is below 1 - threshold, else ``unchanged``: a verdict needs both size and evidence."""
    if interval.lo > 1 + threshold:
        return "regression"
    if interval.hi < 1 - threshold:
        return "improvement"
    return "unchanged"


def decided(interval: Interval, threshold: float) -> bool:
    """Whether more rounds could not change the verdict's reading: the interval straddles neither 1 + threshold
    nor 1 - threshold. A case whose interval straddles one is the one that needs more rounds."""
    return not any(interval.lo <= edge <= interval.hi for edge in (1 + threshold, 1 - threshold))


def time_case(head: Subject, base: Subject, *, rounds: int, min_run_time: float, warmup: int,
              until: Callable[[list[float]], bool] | None = None) -> PairedTiming:
    """What the code costs, not how often a neighbour preempted it: with one torch thread each call is timed
    in this thread's CPU time (``time.thread_time``), and each round's figure per side is its fastest block.
    With more threads the work leaves this thread, so wall time is used (and load shows). ``a`` is the head,
    ``b`` the base."""
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    subjects = (head, base)

    def fresh_memory(order: tuple[int, int]) -> None:
        for i in order:
            subjects[i].renew()

    return time_paired(head.call, base.call, rounds=rounds, min_run_time=min_run_time, warmup=warmup,
                       device=torch.device("cpu"), prepare=fresh_memory, statistic="min", clock=clock, until=until)
