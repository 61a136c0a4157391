"""A paired timing under a precision rule (``paired_with``) and the rows it gives (``add_paired``): the point's
forward, train, decode and prefill timings, the quality step's and each component's alone all write these."""

from __future__ import annotations

from collections.abc import Callable

from ablations.config.checks import Shape
from ablations.measure.intervals import RoundsRule
from ablations.measure.timing import PairedTiming, time_paired
from ablations.results.rows import Rows, Summary


def paired_with(rule: RoundsRule, fn_a: Callable[[], object], fn_b: Callable[[], object],
                **timed: object) -> PairedTiming:
    """``time_paired`` under ``rule``: its budget as the rounds, stopping at a look once the ratio's interval is
    narrow enough (fixed rounds when the rule has one look)."""
    return time_paired(fn_a, fn_b, rounds=rule.max_rounds, until=rule.done if len(rule.looks) > 1 else None,
                       **timed)


def add_paired(rows: Rows, prefix: str, mode: str, shape: Shape, paired: PairedTiming, tokens: int,
               rule: RoundsRule | None = None) -> Summary:
    """Rows for one paired timing: latency of both, the ratio (the headline) with its quartiles, the ratio's 95%
    interval (``{prefix}ratio_interval``: its relative half-width as the value, the bounds as lo/hi, the rounds
    used as n, and in ``note`` whether it stopped on its target, its round budget, or ran fixed rounds), and
    tokens/s."""
    a, b, ratio = Summary.of(paired.a), Summary.of(paired.b), Summary.of(paired.ratios)
    rule = rule or RoundsRule(len(paired.ratios), len(paired.ratios))
    if len(paired.ratios) >= 2:
        iv = rule.interval(paired.ratios)
        rows.add(f"{prefix}ratio_interval", iv.halfwidth, "fraction", mode=mode, shape=shape,
                 statistic=f"ci{100 * rule.confidence:g}", lo=iv.lo, hi=iv.hi, n=len(paired.ratios),
                 note=f"stopped: {rule.stopped_on(paired.ratios)}")
    rows.add(f"{prefix}latency", a.median, "s", mode=mode, shape=shape, statistic="median", summary=a)
    rows.add(f"{prefix}baseline_latency", b.median, "s", mode=mode, shape=shape, statistic="median", summary=b)
    rows.add(f"{prefix}latency_ratio", ratio.median, "x", mode=mode, shape=shape, statistic="median",
             summary=ratio)
    if paired.cpu_share:
        share = Summary.of(paired.cpu_share)
        rows.add(f"{prefix}cpu_share", share.median, "fraction", mode=mode, shape=shape, statistic="median",
                 summary=share)
    per_s = [tokens / t for t in paired.a]
    rows.add(f"{prefix}throughput", tokens / a.median, "tokens/s", mode=mode, shape=shape, statistic="median",
             summary=Summary.of(per_s))
    return a
