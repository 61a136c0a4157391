"""The statistics behind a quality verdict, all from ``scipy.stats``: a Student-t interval for a mean, the
paired t-test of a variant against its reference over seeds, Holm-Bonferroni across a family of such tests,
and the minimum detectable effect of a paired t-test at a given level.

Only Holm's step-down is written here: scipy's one multiple-testing adjustment is Benjamini-Hochberg's
false discovery rate, and a verdict per comparison needs the family-wise error rate.
"""

from __future__ import annotations

import functools
import math
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# scipy is imported inside the functions that test: a command's start (every run's checks) does not pay for it.
ALPHA = 0.05  # family-wise error rate of one sweep's comparisons of one quantity
POWER = 0.8  # the power at which the minimum detectable effect is quoted
# The sweep whose points are also compared with the rung below (one Llama-2 choice fewer), not only the baseline.
RUNG_SWEEP = "ladder"


@dataclass(frozen=True)
class Interval:
    """Mean with its Student-t interval; ``lo``/``hi`` are NaN with fewer than two values."""

    mean: float
    std: float
    n: int
    lo: float
    hi: float


def mean_ci(values: Sequence[float], level: float = 0.95) -> Interval:
    """``mean +- t(1 - (1 - level)/2, n-1) * sd / sqrt(n)``, from ``scipy.stats.t.interval``."""
    from scipy import stats
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, 0, math.nan, math.nan)
    mean = statistics.fmean(values)
    if n == 1:
        return Interval(mean, math.nan, 1, math.nan, math.nan)
    std = statistics.stdev(values)
    if std == 0:
        return Interval(mean, 0.0, n, mean, mean)
    lo, hi = stats.t.interval(level, n - 1, loc=mean, scale=std / math.sqrt(n))
    return Interval(mean, std, n, float(lo), float(hi))


@dataclass(frozen=True)
class PairedTest:
    """Variant minus reference over the seeds both finished: the differences' mean, sd and n, and the
    two-sided paired t-test's p-value (NaN with fewer than two shared seeds)."""

    mean: float
    sd: float
    n: int
    p: float

    def interval(self, alpha: float) -> tuple[float, float]:
        """The ``1 - alpha`` t interval of the mean difference: it excludes zero exactly when ``p < alpha``."""
        from scipy import stats
        if self.n < 2 or math.isnan(alpha):
            return math.nan, math.nan
        if self.sd == 0:
            return self.mean, self.mean
        lo, hi = stats.t.interval(1 - alpha, self.n - 1, loc=self.mean, scale=self.sd / math.sqrt(self.n))
        return float(lo), float(hi)


def paired_test(variant: dict[int, float], reference: dict[int, float]) -> PairedTest:
    """``scipy.stats.ttest_rel`` of variant against reference, paired by seed."""
    from scipy import stats
    seeds = sorted(variant.keys() & reference.keys())
    a = np.array([variant[s] for s in seeds])
    b = np.array([reference[s] for s in seeds])
    d = a - b
    if len(seeds) < 2:
        return PairedTest(float(d.mean()) if len(seeds) else math.nan, math.nan, len(seeds), math.nan)
    sd = float(d.std(ddof=1))
    if sd == 0:
        # Every seed moved by exactly the same amount: no spread to test against. A zero shift is no
        # difference (scipy's 0/0); any other is certain (scipy's infinite t).
        return PairedTest(float(d.mean()), 0.0, len(seeds), 1.0 if d.mean() == 0 else 0.0)
    with warnings.catch_warnings():
        # scipy warns when the differences are nearly equal; the sd above is exact enough for the test.
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(stats.ttest_rel(a, b).pvalue)
    return PairedTest(float(d.mean()), sd, len(seeds), p)


def holm(p: Sequence[float], alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Holm-Bonferroni over one family: (adjusted p, the level each comparison's own p is held to).

    With the m p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value is
    ``p_holm_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` and a comparison is declared when
    ``p_holm < alpha``: the family-wise error rate stays at or below ``alpha`` whatever the dependence
    between the tests (they share a baseline here). The level returned, ``min(alpha / (m - i + 1),
    alpha * p / p_holm)``, is Holm's step level, lowered where an earlier step already failed; ``p`` is below
    it exactly when ``p_holm < alpha``, so the ``1 - level`` interval agrees with the verdict. NaN p-values
    (comparisons without a test) are not members of the family and stay NaN.
    """
    p = np.asarray(p, dtype=float)
    adjusted, level = np.full_like(p, np.nan), np.full_like(p, np.nan)
    members = np.flatnonzero(~np.isnan(p))
    m = len(members)
    order = members[np.argsort(p[members], kind="stable")]
    steps = alpha / (m - np.arange(m))  # alpha/m, alpha/(m-1), ..., alpha
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    with np.errstate(invalid="ignore", divide="ignore"):
        lowered = np.where(adjusted[order] > 0, alpha * p[order] / adjusted[order], steps)
    level[order] = np.minimum(steps, lowered)
    return adjusted, level


def power(effect: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test over ``n`` seeds at ``alpha`` against a true mean difference
    ``effect``, when the paired differences have standard deviation ``sd``."""
    return _power(effect * math.sqrt(n) / sd, n, alpha)


def _power(nc: float, n: int, alpha: float) -> float:
    from scipy import stats
    crit = stats.t.ppf(1 - alpha / 2, n - 1)
    # The lower tail P(T' < -c) as the upper tail of nct(-nc): scipy's nct.cdf returns NaN far out in it.
    return float(stats.nct.sf(crit, n - 1, nc) + stats.nct.sf(crit, n - 1, -nc))


def minimum_detectable_effect(sd: float, n: int, alpha: float, target: float = POWER) -> float:
    """The smallest true mean difference |d| (in the loss's units) that a two-sided paired t-test over ``n``
    seeds at level ``alpha`` detects with probability ``target``, taking the observed sd of the paired
    differences as the true one.

    Under a true difference d the statistic ``t = mean / (sd / sqrt(n))`` follows the noncentral t with
    ``n - 1`` degrees of freedom and noncentrality ``delta = d sqrt(n) / sd``, so the power is
    ``P(T' > c) + P(T' < -c)`` with ``c = t.ppf(1 - alpha/2, n - 1)`` and ``T' ~ nct(n - 1, delta)``. The
    noncentrality where that equals ``target`` is found by root finding; ``d = delta sd / sqrt(n)``.
    With 3 seeds and a Holm level below 0.05 it is several times the sd: that is what 3 seeds can see.
    NaN when there is none to find: fewer than two seeds or no spread (``mde_note`` says which).
    """
    if mde_note(sd, n):
        return math.nan
    return _noncentrality(n, alpha, target) * sd / math.sqrt(n)


@functools.lru_cache(maxsize=4096)
def _noncentrality(n: int, alpha: float, target: float) -> float:
    """The noncentrality at which the test has power ``target``; the MDE scales it by sd / sqrt(n), so one root
    serves every sd (the sequential rule asks at each look)."""
    from scipy import optimize
    hi = 1.0
    while _power(hi, n, alpha) < target:  # power rises to 1 with the noncentrality; 2 seeds need a large one
        hi *= 2
    return float(optimize.brentq(lambda x: _power(x, n, alpha) - target, 0.0, hi, xtol=1e-10))


def mde_note(sd: float, n: int) -> str:
    """Why a comparison has no minimum detectable effect; empty when it has one."""
    if n < 2:
        return f"no MDE: {n} shared seed{'s' if n != 1 else ''}, no spread to size an effect against"
    if math.isnan(sd):
        return "no MDE: the spread of the paired differences is unknown"
    if sd == 0:
        return "no MDE: every seed moved by the same amount (sd of the paired differences is 0)"
    return ""


def planned_looks(first: int, last: int, whole: int = 1) -> list[int]:
    """The counts at which a sequential rule may look: ``first``, then about half as many again each time (rounded
    up to a multiple of ``whole``), ending at ``last``. Few looks cost little width under Bonferroni; the timing
    rounds (``RoundsRule``) and the quality seeds (``ablations.quality.seeds``) share this schedule."""
    if first >= last:
        return [last]
    out = [first]
    while out[-1] < last:
        nxt = math.ceil(out[-1] * 1.5)
        out.append(min(last, nxt + (-nxt) % whole))
    return out
