"""A paired ratio's interval, and when a paired measurement may stop.

The interval is distribution-free: the median of the rounds' ratios with order statistics of the binomial
(Binomial(n, 1/2)) as its bounds, so nothing assumes the rounds are normal, and one round a neighbour
process spoiled moves it by at most one rank.

Stopping early on what the rounds show (optional stopping) breaks a fixed-sample interval: look after every
round and stop the first time it is narrow enough, and the intervals that stopped are the ones that happened
to come out narrow, which cover less often than they say. ``RoundsRule`` keeps the stated coverage by looking
only at a few planned round counts (``looks``: the minimum, then half as many again each time, up to the
budget) and holding each look's interval at ``1 - alpha / looks`` (Bonferroni over the looks): the chance
that the interval misses at *any* look is then at most ``alpha``, so the one reported, wherever the run
stopped, covers with at least ``1 - alpha`` whatever the stopping rule read. Bonferroni rather than an
alpha-spending function because the order-statistic interval's coverage moves in steps anyway; a few looks
cost little width (``tests/ablations/test_intervals.py`` checks the coverage by simulation).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ablations.config.schema import ProfileConfig
from ablations.quality.inference import planned_looks
from components.config import ConfigError

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    median: float
    lo: float
    hi: float
    coverage: float  # the interval's exact coverage (order statistics give a little more than asked)

    @property
    def halfwidth(self) -> float:
        """Half the interval's width relative to the median: 0.02 reads "the ratio within about ±2%"."""
        return (self.hi - self.lo) / 2 / abs(self.median) if self.median else math.inf


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Median with the order-statistic interval [x_(k), x_(n-k+1)] covering it with at least ``confidence``.

    With n values, the number below the true median is Binomial(n, 1/2); k is the largest rank with
    P(B <= k-1) <= (1 - confidence) / 2. Too few values for that (n < 6 at 95%) give [min, max] and the
    coverage they have.
    """
    if not values:
        raise ValueError("no rounds to summarise")
    xs, n = sorted(values), len(values)
    k, coverage = _rank(n, confidence)
    return Interval(statistics.median(xs), xs[k - 1], xs[n - k], coverage)


@functools.lru_cache(maxsize=1024)
def _rank(n: int, confidence: float) -> tuple[int, float]:
    """The order statistic k of ``median_interval`` at n values, and the interval's exact coverage."""
    tail = (1 - confidence) / 2
    k = 0
    while _half_binomial_cdf(k, n) < tail:  # smallest k with P(B <= k) >= tail
        k += 1
    while k >= 1 and _half_binomial_cdf(k - 1, n) > tail:
        k -= 1
    k = max(k, 1)
    return k, 1 - 2 * _half_binomial_cdf(k - 1, n)


def _half_binomial_cdf(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2), exactly (integer counts over 2^n): what ``scipy.stats.binom.cdf`` gives,
    without importing scipy into every command's start."""
    return sum(math.comb(n, i) for i in range(max(k, -1) + 1)) / 2**n


def fewest_rounds(confidence: float) -> int:
    """The fewest rounds whose [min, max] covers the median with ``confidence`` (6 at 95%)."""
    return math.ceil(1 - math.log2(1 - confidence))


@dataclass(frozen=True)
class RoundsRule:
    """Run paired rounds until the ratio's interval is within ``target_halfwidth`` (relative) of its median, or
    ``max_rounds`` are spent, never fewer than ``min_rounds``; the interval holds ``confidence`` under that
    stopping (see the module docstring). ``min_rounds == max_rounds``: exactly that many, one look. With no
    target the looks are still planned, for a caller's own stopping test (the regression check stops a case once
    its verdict is decided)."""

    min_rounds: int
    max_rounds: int
    target_halfwidth: float | None = None
    confidence: float = CONFIDENCE

    @property
    def looks(self) -> list[int]:
        """The round counts at which the rule may stop: ``min_rounds``, then about half as many again each time
        (rounded up to an even count, a whole ABBA pair), ending at ``max_rounds``."""
        return planned_looks(self.min_rounds, self.max_rounds, whole=2)

    @property
    def look_confidence(self) -> float:
        """Each look's level, so that all of them hold together with ``confidence`` (Bonferroni)."""
        return 1 - (1 - self.confidence) / len(self.looks)

    def problem(self) -> str | None:
        """Why these settings cannot give the interval they promise, or None."""
        if self.target_halfwidth is not None and not 0 < self.target_halfwidth < 1:
            return f"target_halfwidth={self.target_halfwidth} must be a fraction in (0, 1) (0.02: within ±2%)"
        if self.min_rounds > self.max_rounds:
            return f"min_rounds={self.min_rounds} is more than max_rounds={self.max_rounds}"
        need = fewest_rounds(self.look_confidence)
        if self.looks[0] < need:
            return (f"min_rounds={self.looks[0]} is too few for a {100 * self.confidence:g}% interval held over "
                    f"{len(self.looks)} look(s): at least {need}")
        return None

    def interval(self, ratios: Sequence[float]) -> Interval:
        return median_interval(ratios, self.look_confidence)

    def done(self, ratios: Sequence[float]) -> bool:
        """Whether a look at ``len(ratios)`` rounds may stop: the budget is spent, or the interval is narrow."""
        n = len(ratios)
        if n >= self.max_rounds:
            return True
        if n not in self.looks or self.target_halfwidth is None:
            return False
        return self.interval(ratios).halfwidth <= self.target_halfwidth

    def stopped_on(self, ratios: Sequence[float]) -> str:
        """``target`` (narrow enough), ``budget`` (max_rounds spent, still wider), or ``fixed`` (one look)."""
        if len(self.looks) == 1 or self.target_halfwidth is None:
            return "fixed"
        return "target" if self.interval(ratios).halfwidth <= self.target_halfwidth else "budget"


SCOPES = ("headline", "every")


def rounds_rule_of(p: ProfileConfig, fixed_rounds: int | None = None, headline: bool = True) -> RoundsRule:
    """The rounds rule of a profile for one paired measurement.

    Sequential when ``profile.target_halfwidth`` is set (``min_rounds`` and ``max_rounds`` then required) and the
    measurement is in its scope: every one under ``target_scope=every``, the headline ones only
    (``ablations.measure.shapes``, what the report's speed table reads) under ``headline``. Otherwise exactly
    ``fixed_rounds`` (the profile's ``rounds`` by default): the other shapes feed the every-shape grid and the
    figures, where a few percent more spread changes no reading, so their rounds are not worth the target's.
    """
    keys = ("target_halfwidth", "min_rounds", "max_rounds")
    target, low, high = (getattr(p, k) for k in keys)
    scope = p.target_scope
    if scope not in SCOPES:
        raise ConfigError(f"profile.target_scope={scope} is not one of {', '.join(SCOPES)}")
    rounds = int(p.rounds if fixed_rounds is None else fixed_rounds)
    if target is None:
        if low is not None or high is not None:
            raise ConfigError("profile.min_rounds and profile.max_rounds apply with profile.target_halfwidth "
                              "(e.g. 0.02); set it, or leave both null for the fixed profile.rounds")
        return RoundsRule(rounds, rounds)
    if low is None or high is None:
        raise ConfigError(f"profile.target_halfwidth={target} needs profile.min_rounds and profile.max_rounds "
                          "(e.g. 8 and 48)")
    rule = RoundsRule(int(low), int(high), target_halfwidth=float(target))
    problem = rule.problem()
    if problem:
        raise ConfigError(f"profile.{problem}")
    return rule if headline or scope == "every" else RoundsRule(rounds, rounds)
