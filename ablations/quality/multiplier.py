"""What a design choice buys in training compute: the compute multiplier, with its interval over seeds.

**The multiplier** k of a variant is the factor by which the baseline's training must grow, under the same recipe,
to reach the variant's final validation loss: k = 2 means the variant at S steps is as good as the baseline at 2S.
It is read off the baseline's own loss-versus-compute curve (``train.budgets``): the baseline trained again at
several budgets, each a complete schedule (warm-up and cosine decay stretched to the longer run, ``budget_train``),
because the loss mid-way through a cosine run is not the loss of a shorter run.

**Per seed, paired.** Each seed of the baseline has its own curve: the budgets it was trained at, made monotone
(loss never rises with compute: ``scipy.optimize.isotonic_regression``) and read between its knots by ``FIT`` in log
compute (``FITS``: straight, or the monotone cubic through every knot).
The variant's final loss at the same seed (same data order, same initial weights for the modules they share) is
inverted on that curve. A loss outside the curve's range is a **bound**, never an extrapolation: better than the
baseline at its largest budget reads ``> 4×``, worse than at its smallest ``< 0.5×``.

**The interval.** A Student-t 95% interval over seeds on log k (multipliers multiply, so their errors are
symmetric on the log scale). A censored seed is clamped at its bound, which moves the estimate towards the measured
range; the side it was censored on is reported open (``[2.5, > 4]``), and when half or more of the seeds are
censored on one side the whole reading is that bound. The fit's own error between knots (``interpolation_error``:
each interior knot left out and read back, root mean square in log2) is added to the half-width in quadrature.

**In steps and in FLOPs.** ``k_steps`` compares step counts; ``k_flops`` training FLOPs, each arm at its own count
per step (the work model's, ``ablations.roofline.work``): k_flops = k_steps x F_baseline / F_variant, so a variant
that costs more per step must buy more than it costs.

**Known answers** (``ablations.quality.worth``): readings whose true multiple is known, which the fit must
interpolate as it does for a variant. ``left_out``: each seed's interior knot read on its own curve with that knot
removed. A between-knot budget (``train.check_budgets``): the baseline trained at a multiple no knot has, read on its
own seed's curve exactly as a variant is. A read of each seed's knot on the next seed's curve is no known answer: at
a knot the seeds' differences cancel over the cycle, whatever the fit does between knots.

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


def invert(curve: Curve, loss: float, fit: str | None = None) -> Reading:
    """The budget at which ``curve`` reaches ``loss`` under ``fit`` (``FITS``; ``FIT`` when None): a loss past the
    fitted losses at the curve's ends is a bound, never an extrapolation."""
    if len(curve.budgets) < 2:
        raise ValueError("a curve needs at least two budgets")
    x = np.log2(np.asarray(curve.budgets, dtype=float))
    y = curve.fitted()
    if loss > y[0]:
        return Reading(curve.budgets[0], BELOW)
    if loss < y[-1]:
        return Reading(curve.budgets[-1], ABOVE)
    # The run of fitted points at the loss (ties from the monotone fit): the middle of the run, in log compute.
    at = np.flatnonzero(np.isclose(y, loss, rtol=0, atol=1e-12))
    if len(at):
        return Reading(float(2 ** ((x[at[0]] + x[at[-1]]) / 2)))
    i = int(np.flatnonzero(y > loss)[-1])  # the segment that brackets the loss: y[i] > loss > y[i + 1]
    return Reading(float(2 ** FITS[fit or FIT](x, y, i, loss)))


def _linear(x: np.ndarray, y: np.ndarray, i: int, loss: float) -> float:
    """Straight between the two fitted points that bracket the loss, in log compute."""
    return float(x[i] + (y[i] - loss) / (y[i] - y[i + 1]) * (x[i + 1] - x[i]))


def _pchip(x: np.ndarray, y: np.ndarray, i: int, loss: float) -> float:
    """Through every fitted point with the slopes of its neighbours (Fritsch-Carlson, ``scipy``'s PCHIP): monotone
    where the points are, so the root in the bracketing segment is the only one."""
    from scipy.interpolate import PchipInterpolator
    from scipy.optimize import brentq
    curve = PchipInterpolator(x, y)
    return float(brentq(lambda t: float(curve(t)) - loss, x[i], x[i + 1], xtol=1e-12))


# How the curve is read between its knots. Chosen by the known answers it must interpolate (docs/quality.md: the
# fits tried against the horizon's leave-one-knot-out and between-knot budgets, python -m scripts.curve_fits).
FITS = {"linear": _linear, "pchip": _pchip}
FIT = "pchip"


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

    def judged(self) -> bool:
        """Whether the reading has an interval (or a bound) to hold a multiple in: not one seed alone."""
        return bool(self.bound) or (self.n >= 2 and not math.isnan(self.lo))

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
            span: tuple[float, float] = (0.0, math.inf), fit_error: float = 0.0) -> Multiplier:
    """Seeds' readings to one multiplier (module docstring: the t interval on log k, censoring as bounds). ``span``
    is the curves' range of budgets: an interval end past it is reported as that bound. ``fit_error``: the fit's
    error between knots in log2 (``interpolation_error``), added to the half-width in quadrature."""
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
    half = math.hypot(float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n), fit_error)
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


def multiplier(curves: dict[int, Curve], losses: dict[int, float], level: float = LEVEL,
               fit_error: float | None = None, fit: str | None = None) -> Multiplier:
    """The variant's multiplier in steps from its final loss per seed and the baseline's curve of the same seed; its
    interval holds the fit's error between knots (``interpolation_error`` of the curves when None)."""
    seeds = sorted(curves.keys() & losses.keys())
    error = interpolation_error(curves, fit) if fit_error is None else fit_error
    return combine([invert(curves[s], losses[s], fit) for s in seeds], level, span_of(curves), error)


def span_of(curves: dict[int, Curve]) -> tuple[float, float]:
    """The budgets every curve covers: where a multiplier is measured rather than bounded."""
    if not curves:
        return 0.0, math.inf
    return max(curve.budgets[0] for curve in curves.values()), min(curve.budgets[-1] for curve in curves.values())


def left_out(curves: dict[int, Curve], budget: float, level: float = LEVEL, fit: str | None = None) -> Multiplier:
    """A known answer the fit must interpolate: each seed's loss at its knot ``budget`` read on its own curve with
    that knot left out, as a variant's loss is read between knots. Its interval holds the fit's error measured at
    the *other* interior knots (none: the seeds' alone), so the row checks whether that error, as k's interval
    carries it, covers this knot too: it can fail."""
    readings = []
    for curve in curves.values():
        own = dict(zip(curve.budgets, curve.losses, strict=True))
        if budget in own and len(own) > 2:
            rest = Curve.of({b: v for b, v in own.items() if b != budget})
            readings.append(invert(rest, own[budget], fit))
    return combine(readings, level, span_of(curves), interpolation_error(curves, fit, besides=budget))


def interior_knots(curves: dict[int, Curve]) -> list[float]:
    """The knots every curve has strictly inside its range: those a leave-one-out reading can check."""
    if not curves:
        return []
    shared = set.intersection(*(set(curve.budgets) for curve in curves.values()))
    bottom, top = span_of(curves)
    return sorted(b for b in shared if bottom < b < top)


def interpolation_error(curves: dict[int, Curve], fit: str | None = None, besides: float | None = None) -> float:
    """The fit's error between knots, in log2 of the multiplier: the root mean square over seeds and interior knots
    (``besides`` one) of each left-out knot's reading against its budget (a bound counts at its clamp). 0 without
    interior knots."""
    errors = []
    for budget in (b for b in interior_knots(curves) if b != besides):
        for curve in curves.values():
            own = dict(zip(curve.budgets, curve.losses, strict=True))
            reading = invert(Curve.of({b: v for b, v in own.items() if b != budget}), own[budget], fit)
            errors.append(math.log2(reading.value / budget))
    return float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0


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
