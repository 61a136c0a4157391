"""What a design choice buys in training compute: the compute multiplier, with its interval over seeds.

**The multiplier** k of a variant is the factor by which the baseline's training must grow, under the same recipe,
to reach the variant's final validation loss: k = 2 means the variant at S steps is as good as the baseline at 2S.
It is read off the baseline's own loss-versus-compute curve (``train.budgets``): the baseline trained again at
several budgets, each a complete schedule (warm-up and cosine decay stretched to the longer run, ``budget_train``),
because the loss mid-way through a cosine run is not the loss of a shorter run.

**Per seed, paired.** Each seed of the baseline has its own curve: the budgets it was trained at, made monotone
(loss never rises with compute: ``scipy.optimize.isotonic_regression``) and interpolated linearly in log compute.
The variant's final loss at the same seed (same data order, same initial weights for the modules they share) is
inverted on that curve. A loss outside the curve's range is a **bound**, never an extrapolation: better than the
baseline at its largest budget reads ``> 4×``, worse than at its smallest ``< 0.5×``.

**The interval.** A Student-t 95% interval over seeds on log k (multipliers multiply, so their errors are
symmetric on the log scale). A censored seed is clamped at its bound, which moves the estimate towards the measured
range; the side it was censored on is reported open (``[2.5, > 4]``), and when half or more of the seeds are
censored on one side the whole reading is that bound.

**In steps and in FLOPs.** ``k_steps`` compares step counts; ``k_flops`` training FLOPs, each arm at its own count
per step (the work model's, ``ablations.roofline.work``): k_flops = k_steps x F_baseline / F_variant, so a variant
that costs more per step must buy more than it costs.

**Calibration** (every report that has multipliers shows both rows): the baseline read against itself must give 1
and the baseline trained at 2x must give 2. Read against its own seed's curve either would be exact by
construction, so each seed's known-budget loss is read against the *next* seed's curve (a cyclic shift): the rows
carry the seeds' own noise, as the timing half's baseline-against-itself row carries the clock's, and their
intervals must hold 1 and 2.

**Time to loss.** How much sooner in wall time the variant reaches the baseline's final loss: k_steps over the
variant's train-step time ratio (both paired), their 95% half-widths on the log scale added in quadrature (the
errors are independent: seeds and the clock).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
ABOVE, BELOW = ">", "<"


@dataclass(frozen=True)
class Curve:
    """One seed's baseline losses at its budgets: ``budgets`` as multiples of the run's steps (sorted), ``losses``."""

    budgets: tuple[float, ...]
    losses: tuple[float, ...]

    @classmethod
    def of(cls, points: dict[float, float]) -> Curve:
        budgets = tuple(sorted(points))
        return cls(budgets, tuple(points[b] for b in budgets))

    def fitted(self) -> np.ndarray:
        """The losses made non-increasing in compute (isotonic regression, equal weights)."""
        from scipy.optimize import isotonic_regression
        return np.asarray(isotonic_regression(np.asarray(self.losses, dtype=float), increasing=False).x)


@dataclass(frozen=True)
class Reading:
    """One seed's multiplier: ``value`` (a multiple of the steps), or the bound it is past (``censored``)."""

    value: float
    censored: str = ""  # "" inside the curve, ABOVE past its largest budget, BELOW under its smallest


def invert(curve: Curve, loss: float) -> Reading:
    """The budget at which ``curve`` reaches ``loss``: linear in log budget between the fitted points."""
    if len(curve.budgets) < 2:
        raise ValueError("a curve needs at least two budgets")
    x = np.log2(np.asarray(curve.budgets, dtype=float))
    y = curve.fitted()
    if loss > y[0]:
        return Reading(curve.budgets[0], BELOW)
    if loss < y[-1]:
        return Reading(curve.budgets[-1], ABOVE)
    # The run of fitted points at the loss (ties from the monotone fit) or the segment that brackets it.
    at = np.flatnonzero(np.isclose(y, loss, rtol=0, atol=1e-12))
    if len(at):
        return Reading(float(2 ** ((x[at[0]] + x[at[-1]]) / 2)))
    i = int(np.flatnonzero(y > loss)[-1])
    frac = (y[i] - loss) / (y[i] - y[i + 1])
    return Reading(float(2 ** (x[i] + frac * (x[i + 1] - x[i]))))


@dataclass(frozen=True)
class Multiplier:
    """A multiplier over seeds: the geometric mean with its interval; ``open_lo``/``open_hi`` mark a side that is
    a bound; ``bound`` is set when the whole reading is one (``>`` or ``<``, at ``estimate``)."""

    estimate: float
    lo: float
    hi: float
    n: int
    censored: int = 0
    bound: str = ""
    open_lo: bool = False
    open_hi: bool = False

    def scaled(self, factor: float) -> Multiplier:
        """The same reading in other units (steps to FLOPs: x F_baseline / F_variant)."""
        return Multiplier(self.estimate * factor, self.lo * factor, self.hi * factor, self.n, self.censored,
                          self.bound, self.open_lo, self.open_hi)

    def contains(self, k: float) -> bool:
        """Whether ``k`` is inside the interval, an open side reaching past its bound."""
        if self.bound == ABOVE:
            return k >= self.estimate * (1 - 1e-9)
        if self.bound == BELOW:
            return k <= self.estimate * (1 + 1e-9)
        lo_ok = self.open_lo or k >= self.lo * (1 - 1e-9)
        hi_ok = self.open_hi or k <= self.hi * (1 + 1e-9)
        return lo_ok and hi_ok

    def text(self) -> str:
        """``1.32× [1.10, 1.58]``, ``≥ 3.1× [2.2, > 4]``, ``> 4×``."""
        if self.n == 0 or math.isnan(self.estimate):
            return "—"
        if self.bound:
            return f"{self.bound} {_num(self.estimate)}×"
        if self.n < 2 or math.isnan(self.lo):
            return f"{_num(self.estimate)}× ({self.n} seed)"
        lo = f"< {_num(self.lo)}" if self.open_lo else _num(self.lo)
        hi = f"> {_num(self.hi)}" if self.open_hi else _num(self.hi)
        mark = "≥ " if self.open_hi and not self.open_lo else "≤ " if self.open_lo and not self.open_hi else ""
        return f"{mark}{_num(self.estimate)}× [{lo}, {hi}]"


def _num(x: float) -> str:
    return f"{x:.3g}"


def combine(readings: Sequence[Reading], level: float = LEVEL,
            span: tuple[float, float] = (0.0, math.inf)) -> Multiplier:
    """Seeds' readings to one multiplier (module docstring: the t interval on log k, censoring as bounds). ``span``
    is the curves' range of budgets: an interval end past it is reported as that bound."""
    from scipy import stats
    n = len(readings)
    if n == 0:
        return Multiplier(math.nan, math.nan, math.nan, 0)
    logs = np.log2([r.value for r in readings])
    above = sum(r.censored == ABOVE for r in readings)
    below = sum(r.censored == BELOW for r in readings)
    if 2 * above >= n and above:
        return Multiplier(max(r.value for r in readings if r.censored == ABOVE), math.nan, math.nan, n, above, ABOVE)
    if 2 * below >= n and below:
        return Multiplier(min(r.value for r in readings if r.censored == BELOW), math.nan, math.nan, n, below, BELOW)
    mean = float(logs.mean())
    if n < 2:
        return Multiplier(2**mean, math.nan, math.nan, n)
    sd = float(logs.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    bottom, top = span
    if above:  # a censored seed sits at its curve's end: the measured range ends there
        top = min(top, max(r.value for r in readings if r.censored == ABOVE))
    if below:
        bottom = max(bottom, min(r.value for r in readings if r.censored == BELOW))
    lo, hi = 2 ** (mean - half), 2 ** (mean + half)
    open_hi, open_lo = bool(above), bool(below)
    # Past the measured range the interval is a bound, not an extrapolation.
    if hi >= top or above:
        hi, open_hi = top, True
    if lo <= bottom or below:
        lo, open_lo = bottom, True
    return Multiplier(2**mean, lo, hi, n, above + below, "", open_lo, open_hi)


def multiplier(curves: dict[int, Curve], losses: dict[int, float], level: float = LEVEL) -> Multiplier:
    """The variant's multiplier in steps from its final loss per seed and the baseline's curve of the same seed."""
    seeds = sorted(curves.keys() & losses.keys())
    return combine([invert(curves[s], losses[s]) for s in seeds], level, span_of(curves))


def span_of(curves: dict[int, Curve]) -> tuple[float, float]:
    """The budgets every curve covers: where a multiplier is measured rather than bounded."""
    if not curves:
        return 0.0, math.inf
    return max(c.budgets[0] for c in curves.values()), min(c.budgets[-1] for c in curves.values())


def shifted(curves: dict[int, Curve], budget: float, level: float = LEVEL) -> Multiplier:
    """Calibration: each seed's loss at ``budget`` read against the next seed's curve (module docstring); reads
    ``budget`` up to the seeds' noise."""
    seeds = sorted(curves)
    readings = []
    for i, s in enumerate(seeds):
        own = dict(zip(curves[s].budgets, curves[s].losses, strict=True))
        if budget not in own or len(seeds) < 2:
            continue
        readings.append(invert(curves[seeds[(i + 1) % len(seeds)]], own[budget]))
    return combine(readings, level, span_of(curves))


@dataclass(frozen=True)
class TimeToLoss:
    """How many times sooner in wall time the variant reaches the baseline's final loss, with its interval."""

    estimate: float
    lo: float
    hi: float
    bound: str = ""
    open_lo: bool = False
    open_hi: bool = False

    def text(self) -> str:
        if math.isnan(self.estimate):
            return "—"
        if self.bound:
            return f"{self.bound} {_num(self.estimate)}×"
        if math.isnan(self.lo):
            return f"{_num(self.estimate)}×"
        lo = f"< {_num(self.lo)}" if self.open_lo else _num(self.lo)
        hi = f"> {_num(self.hi)}" if self.open_hi else _num(self.hi)
        return f"{_num(self.estimate)}× [{lo}, {hi}]"


def time_to_loss(k_steps: Multiplier, ratio: float, ratio_lo: float = math.nan,
                 ratio_hi: float = math.nan) -> TimeToLoss:
    """``k_steps / ratio``, the train-step time ratio (variant over baseline) with its 95% interval; the two
    half-widths on the log scale added in quadrature. A bound stays a bound (divided by the ratio)."""
    if k_steps.n == 0 or math.isnan(k_steps.estimate) or not ratio > 0:
        return TimeToLoss(math.nan, math.nan, math.nan)
    est = k_steps.estimate / ratio
    if k_steps.bound:
        # A bound on k is a bound on k / r at r's own end that keeps it one.
        end = ratio_lo if k_steps.bound == "<" else ratio_hi
        end = end if end > 0 and not math.isnan(end) else ratio
        return TimeToLoss(k_steps.estimate / end, math.nan, math.nan, k_steps.bound)
    if math.isnan(k_steps.lo):
        return TimeToLoss(est, math.nan, math.nan)
    half_r = (math.log2(ratio_hi) - math.log2(ratio_lo)) / 2 if ratio_lo > 0 and ratio_hi > 0 else 0.0
    # Each side on its own (a side clipped at the curve's range is shorter), the clock's error added to it.
    down = math.hypot(math.log2(k_steps.estimate / k_steps.lo), half_r)
    up = math.hypot(math.log2(k_steps.hi / k_steps.estimate), half_r)
    return TimeToLoss(est, est / 2**down, est * 2**up, open_lo=k_steps.open_lo, open_hi=k_steps.open_hi)
