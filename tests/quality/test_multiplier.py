"""The compute multiplier's inversion, bounds, interval and time to loss (ablations.quality.multiplier)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ablations.quality.multiplier import (
    ABOVE,
    BELOW,
    FIT,
    Curve,
    Reading,
    combine,
    interpolation_error,
    invert,
    left_out,
    multiplier,
    time_to_loss,
)

BUDGETS = (0.5, 1.0, 2.0, 4.0)


def power_law(budget: float, a: float = 1.2, b: float = 1.0, alpha: float = 0.3) -> float:
    """A loss falling as a power of compute, the form scaling laws fit: a + b * budget^-alpha."""
    return a + b * budget ** -alpha


def law_curve(**kw: float) -> Curve:
    return Curve.of({budget: power_law(budget, **kw) for budget in BUDGETS})


@pytest.mark.parametrize("known", [0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 4.0])
def test_inversion_recovers_a_known_multiplier_on_a_synthetic_curve(known):
    """The variant's loss is the baseline's at ``known`` x the compute: the inversion reads it back, to the error
    of linear interpolation in log compute between the budgets (under 2% on this curve)."""
    reading = invert(law_curve(), power_law(known))
    assert reading.censored == ""
    assert reading.value == pytest.approx(known, rel=0.02)


def test_budget_points_are_read_exactly():
    curve = law_curve()
    for b in BUDGETS:
        assert invert(curve, power_law(b)).value == pytest.approx(b, rel=1e-12)


def test_a_loss_outside_the_budgets_is_a_bound_never_an_extrapolation():
    curve = law_curve()
    assert invert(curve, power_law(8.0)) == Reading(4.0, ABOVE)
    assert invert(curve, power_law(0.25)) == Reading(0.5, BELOW)
    k = multiplier({s: curve for s in range(3)}, {s: power_law(8.0) for s in range(3)})
    assert k.bound == ABOVE and k.estimate == 4.0 and k.text() == "> 4×"
    k = multiplier({s: curve for s in range(3)}, {s: power_law(0.3) for s in range(3)})
    assert k.text() == "< 0.5×"


def test_a_noisy_curve_is_made_monotone_before_it_is_inverted():
    """A budget that scored worse than a smaller one (seed noise) must not make the loss-to-compute map
    non-monotone: isotonic regression pools the two."""
    curve = Curve.of({0.5: 2.0, 1.0: 1.8, 2.0: 1.85, 4.0: 1.5})
    fitted = curve.fitted()
    assert np.all(np.diff(fitted) <= 0)
    assert fitted[1] == fitted[2] == pytest.approx(1.825)
    # A loss at the pooled level reads the middle of its run, in log compute: sqrt(1 x 2).
    assert invert(curve, 1.825).value == pytest.approx(math.sqrt(2.0))


def test_the_interval_is_a_t_interval_on_log_k_over_seeds():
    readings = [Reading(v) for v in (1.2, 1.5, 1.35, 1.4)]
    k = combine(readings)
    logs = np.log2([1.2, 1.5, 1.35, 1.4])
    from scipy import stats
    half = stats.t.ppf(0.975, 3) * logs.std(ddof=1) / 2
    assert k.estimate == pytest.approx(2 ** logs.mean())
    assert (k.lo, k.hi) == pytest.approx((2 ** (logs.mean() - half), 2 ** (logs.mean() + half)))
    assert k.contains(1.35) and not k.contains(1.0)


def test_a_censored_seed_opens_its_side_of_the_interval():
    k = combine([Reading(2.5), Reading(3.0), Reading(4.0, ABOVE), Reading(2.8)])
    assert k.open_hi and not k.open_lo and k.hi == 4.0 and k.censored == 1
    assert k.text().startswith("≥ ") and "> 4" in k.text()
    assert k.contains(10.0)


def test_the_multiplier_is_paired_by_seed():
    """Each seed's variant loss is read on that seed's own curve: a seed offset that shifts both alike cancels."""
    curves = {s: law_curve(a=1.2 + 0.05 * s) for s in range(4)}
    losses = {s: power_law(2.0, a=1.2 + 0.05 * s) for s in range(4)}
    k = multiplier(curves, losses)
    assert k.estimate == pytest.approx(2.0, rel=1e-9)


def _noisy_law_curves(seeds: int = 5, sd: float = 0.004, budgets: tuple[float, ...] = BUDGETS) -> dict[int, Curve]:
    """A power law whose drop per doubling shrinks with compute, each seed shifted and noisy."""
    rng = np.random.default_rng(0)
    return {s: Curve.of({budget: power_law(budget) + 0.01 * s + rng.normal(0, sd) for budget in budgets})
            for s in range(seeds)}


def _saturating(budget: float) -> float:
    """A loss whose drop per doubling shrinks at a rate of its own: a logistic in log compute, half-way at 0.5."""
    return 1.0 + 1.5 / (1 + (budget / 0.5) ** 0.5)


def test_a_knot_left_out_fails_a_straight_line_and_holds_for_the_chosen_fit():
    """The known answers the fit must interpolate, on a curve where the drop per doubling changes: a straight line
    in log compute reads the 2x knot (left out) as 2.08x, outside its interval, which carries the smaller error the
    line made at the 1x knot. The chosen fit (the monotone cubic) holds both knots."""
    rng = np.random.default_rng(0)
    curves = {s: Curve.of({budget: _saturating(budget) + 0.01 * s + rng.normal(0, 0.002) for budget in BUDGETS})
              for s in range(5)}
    assert FIT == "pchip"
    assert left_out(curves, 1.0).contains(1.0) and left_out(curves, 2.0).contains(2.0)
    straight = left_out(curves, 2.0, fit="linear")
    assert not straight.contains(2.0) and straight.estimate > 2.05


def test_the_chosen_fit_reads_a_power_law_between_knots_closer_than_a_straight_line():
    """On a power law (the form scaling laws fit) a straight line in log compute misreads a left-out knot by 7-15%;
    the monotone cubic by about 1%: its error, which k's interval carries, is a fifth of the line's or less."""
    curves = _noisy_law_curves(sd=0.0)
    assert interpolation_error(curves) < interpolation_error(curves, "linear") / 5


def test_a_between_knot_budget_is_read_as_a_variant_is():
    """The baseline trained at a budget no knot has, read on its own seed's curve: holds its multiple."""
    curves = _noisy_law_curves()
    rng = np.random.default_rng(1)
    for budget in (2**0.5, 2**1.5):
        losses = {s: power_law(budget) + 0.01 * s + rng.normal(0, 0.004) for s in curves}
        assert multiplier(curves, losses).contains(budget)


def test_the_fit_error_widens_the_interval_and_is_zero_on_a_line():
    """The left-out knots' error (log2) enters k's half-width in quadrature: on a curve straight in log compute a
    straight fit reads every left-out knot exactly, so it adds nothing."""
    line = {s: Curve.of({budget: 2.0 - 0.1 * math.log2(budget) + 0.01 * s for budget in BUDGETS}) for s in range(3)}
    assert interpolation_error(line, "linear") == pytest.approx(0.0, abs=1e-9)
    curves = _noisy_law_curves()
    error = interpolation_error(curves)
    assert error > 0
    losses = {s: power_law(1.5) + 0.01 * s for s in curves}
    plain, widened = multiplier(curves, losses, fit_error=0.0), multiplier(curves, losses)
    assert plain.estimate == pytest.approx(widened.estimate)
    assert math.log2(widened.hi / widened.estimate) == pytest.approx(
        math.hypot(math.log2(plain.hi / plain.estimate), error))


def test_time_to_loss_divides_by_the_step_time_ratio_and_widens_with_both_intervals():
    k = combine([Reading(v) for v in (1.9, 2.0, 2.1, 2.05)])
    plain = time_to_loss(k, 1.0, 1.0, 1.0)
    assert (plain.lo, plain.hi) == pytest.approx((k.lo, k.hi))
    slower = time_to_loss(k, 1.25, 1.2, 1.3)
    assert slower.estimate == pytest.approx(k.estimate / 1.25)
    assert slower.lo < k.lo / 1.25 and slower.hi > k.hi / 1.25  # the clock's error adds
    bound = time_to_loss(combine([Reading(4.0, ABOVE)] * 3), 2.0, 1.9, 2.1)
    assert bound.text() == f"> {4 / 2.1:.3g}×"  # still a bound, at the ratio's end that keeps it one
