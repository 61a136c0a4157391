"""Base and head timed paired and interleaved, round by round, and a verdict from the rounds' ratios.

Each round times both sides back to back (ABBA across rounds, ``ablations.measure.timing.time_paired``)
after renewing both sides' memory in that round's order, so load and placement move both and cancel in
the round's head/base ratio. The headline is the median of those ratios with a distribution-free interval
(order statistics of the binomial, ``scipy.stats.binom``): no normality assumed, and one round that a
neighbour process spoiled moves it by at most one rank.

One check asks the same question of every case, so the 95% is family-wise: each case's interval is at
1 - 0.05 / tests (Bonferroni over the cases and the groups below): at 95% per case, a check of dozens of cases
of identical code flags one now and then (a memory-bound decode step's rounds move by tens of percent beside other
jobs; docs/regression.md has the measurements).

That level costs power: at 79 cases a case's 12 rounds give [min, max], so one low round hides a slowdown of a few
percent. A slowdown in code every variant runs (the block's residual path, the attention core, a shared kernel)
moves every case of that component and mode, so each **group** (``block/*/forward``: every block variant's forward)
also gets a verdict from its cases' rounds pooled: 16 cases x 12 rounds give 192 ratios, whose order-statistic
interval at the same family-wise level is a small fraction of a case's, its smallest-to-largest round
(docs/regression.md has the widths measured on same-code runs). Under identical code every round's ratio is above or
below 1 with even odds whichever case it came from, so the pooled interval keeps its coverage there. Where cases
differ in their true slowdown the pooled median is their typical one, and each case keeps its own verdict. With
sequential rounds only each case's first ``min_rounds`` are pooled: how many more a case took depends on what its
rounds showed.

An interval wider than the band between the two edges, ``1 - threshold`` to ``1 + threshold``, cannot say
"unchanged within the threshold" wherever it lies: such a case (or group) that is not a regression or an
improvement is **not judged** (``judge``), never a pass, with the rounds that would judge it (``rounds_to_judge``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import torch

from ablations.measure.intervals import CONFIDENCE, Interval, median_interval
from ablations.measure.timing import PairedTiming, time_paired
from ablations.regress.subjects import Subject


def case_confidence(cases: int, confidence: float = CONFIDENCE) -> float:
    """Each case's level so that all ``cases`` intervals hold together with ``confidence`` (Bonferroni)."""
    return 1 - (1 - confidence) / max(1, cases)


def group_name(case_name: str) -> str:
    """The group a case pools into: its component and mode with any variant (``block/*/forward``)."""
    component, _, rest = case_name.partition("/")
    return f"{component}/*/{rest.rpartition('/')[2]}"


def groups_of(case_names: Sequence[str]) -> dict[str, list[str]]:
    """The groups with two cases or more, in case order (a group of one is that case's own verdict)."""
    out: dict[str, list[str]] = {}
    for name in case_names:
        out.setdefault(group_name(name), []).append(name)
    return {g: names for g, names in out.items() if len(names) > 1}


def tests_in(case_names: Sequence[str]) -> int:
    """How many intervals one check reads, the family its 95% is spread over: each case and each group."""
    return len(case_names) + len(groups_of(case_names))


def pooled_rows(rows: Sequence[dict], threshold: float, confidence: float, first: int | None = None) -> list[dict]:
    """A verdict per group from its timed cases' rounds pooled (each case's first ``first`` rounds when given);
    a case that was not timed (an error) leaves the group with the others."""
    by_name = {r["name"]: r for r in rows}
    out = []
    for group, names in groups_of([r["name"] for r in rows]).items():
        timed = [by_name[n]["ratios"][:first] for n in names if by_name[n].get("ratios")]
        if len(timed) < 2:
            continue
        pooled = [x for ratios in timed for x in ratios]
        iv = median_interval(pooled, confidence)
        row = {"name": group, "cases": len(timed), "rounds": len(pooled), "ratio": iv.median, "lo": iv.lo,
               "hi": iv.hi, "coverage": iv.coverage, "verdict": judge(iv, threshold)}
        if row["verdict"] == NOT_JUDGED:  # each case's share of the pooled rounds that would judge it
            row["rounds_to_judge"] = even(math.ceil(rounds_to_judge(iv, len(pooled), threshold) / len(timed)))
        out.append(row)
    return out


def verdict(interval: Interval, threshold: float) -> str:
    """``regression`` when even the interval's low end is past 1 + threshold, ``improvement`` when even its
    high end is below 1 - threshold, else ``unchanged``: a verdict needs both size and evidence."""
    if interval.lo > 1 + threshold:
        return "regression"
    if interval.hi < 1 - threshold:
        return "improvement"
    return "unchanged"


NOT_JUDGED = "not judged"
EPS = 1e-9  # relative: float noise in a width or a round count is no reason for another verdict or another pair


def too_wide(interval: Interval, threshold: float) -> bool:
    """Whether the interval is wider than the band between the edges, ``2 * threshold``: it then cannot lie within
    ``1 ± threshold``, so it cannot say "unchanged" at the threshold wherever the true ratio is; only a slowdown (or
    speed-up) well past the edge could still show."""
    return interval.hi - interval.lo > 2 * threshold * (1 + EPS)


def judge(interval: Interval, threshold: float) -> str:
    """``verdict``, except that an interval too wide for the band (``too_wide``) that shows neither a regression nor
    an improvement is ``not judged``: neither a regression nor a pass. A regression or an improvement stands
    however wide the interval: its whole interval is past the edge."""
    found = verdict(interval, threshold)
    return NOT_JUDGED if found == "unchanged" and too_wide(interval, threshold) else found


def even(n: int) -> int:
    """``n`` rounded up to a whole ABBA pair of rounds."""
    return n + n % 2


def rounds_to_judge(interval: Interval, rounds: int, threshold: float) -> int:
    """About how many rounds would narrow ``interval`` (from ``rounds``) to the band's width ``2 * threshold``,
    at the spread measured: an interval of the median narrows as 1/sqrt(rounds) (the order statistics' spread
    about the median, asymptotically), so ``rounds * (width / (2 * threshold)) ** 2``, rounded up to an even count.
    An estimate: at the family-wise level 12 rounds give [min, max], wider than the asymptotic rule, and a noisier
    or quieter host moves it."""
    return even(math.ceil(rounds * ((interval.hi - interval.lo) / (2 * threshold)) ** 2 * (1 - EPS)))


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
