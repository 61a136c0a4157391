"""The fits of the baseline's loss-versus-compute curve tried against the known answers it must interpolate.

Each results folder's curves (sweep, text, width, steps) hold the baseline's loss per seed at every budget it was
trained at, knots and between-knot budgets alike. Each curve is read again under each knot design (which budgets are
the curve's knots) and each fit, and every known answer is checked as the report checks it
(``ablations.quality.worth``: the seeds' 95% t interval with the fit's left-out-knot error added):

- ``knot left out``: each seed's interior knot read on its own curve without it;
- ``between knots``: each budget the design leaves out, inside the knots' range, read on its own seed's curve as a
  variant is.

Printed: per curve, design and fit, how many answers hold and the root mean square error of the seeds' readings
in log2; then the totals per design and fit, with the design's cost (the baseline's training per curve seed, in
multiples of the point's steps, the run itself included).

The fits: ``ablations.quality.multiplier.FITS`` (straight in log compute; PCHIP, monotone through every knot) and a
per-seed saturating power law L = E + A c^-alpha (``scipy.optimize.curve_fit``), tried here only.

    python -m scripts.curve_fits results/reference/horizon [results/reference/all_fast_step ...]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ablations.quality.multiplier import ABOVE, BELOW, FITS, Curve, Reading, combine, invert, span_of
from ablations.quality.worth import _curve_groups, _finals
from ablations.report.formatting import markdown_table
from ablations.report.tables import load_table

POWER = "power law"


def _power_invert(curve: Curve, loss: float) -> Reading:
    """The saturating power law fitted to the curve's knots, inverted; past the knots' range a bound, as for FITS."""
    from scipy.optimize import curve_fit
    budgets, y = np.asarray(curve.budgets, dtype=float), np.asarray(curve.losses, dtype=float)

    def law(x: np.ndarray, e: float, a: float, alpha: float) -> np.ndarray:
        return e + a * x ** -alpha
    try:
        (e, a, alpha), _ = curve_fit(law, budgets, y, p0=(y.min() * 0.9, y.max() - y.min() * 0.9, 0.5),
                                     bounds=([0, 1e-9, 1e-3], [y.min(), np.inf, 10]), maxfev=20000)
    except RuntimeError:
        return Reading(math.nan)
    if loss > law(budgets[0], e, a, alpha):
        return Reading(curve.budgets[0], BELOW)
    if loss < law(budgets[-1], e, a, alpha):
        return Reading(curve.budgets[-1], ABOVE)
    return Reading(float((a / (loss - e)) ** (1 / alpha)))


def _read(curve: Curve, loss: float, fit: str) -> Reading:
    return _power_invert(curve, loss) if fit == POWER else invert(curve, loss, fit)


def _knots(curve: Curve) -> dict[float, float]:
    return dict(zip(curve.budgets, curve.losses, strict=True))


def _without(curve: Curve, budget: float) -> Curve:
    return Curve.of({b: v for b, v in _knots(curve).items() if b != budget})


# The knot designs tried: the budgets that are the curve's knots (1 is the run itself).
DESIGNS = {"a doubling apart": (0.5, 1.0, 2.0, 4.0), "half a doubling apart": (0.5, 1.0, 2**0.5, 2.0, 2**1.5, 4.0)}


def _rms(errors: list[float]) -> float:
    return float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0


def _answers(points: dict[int, dict[float, float]], knots: tuple[float, ...], fit: str) -> dict[str, list]:
    """Per kind of known answer: (holds, log2 errors) of each answer under this design and fit."""
    def near(budgets: set[float], b: float) -> float | None:
        return next((x for x in budgets if abs(x - b) < 1e-6 * b), None)

    shared = set.intersection(*(set(p) for p in points.values()))
    design = [near(shared, k) for k in knots]
    if any(k is None for k in design):
        return {}
    curves = {s: Curve.of({k: p[k] for k in design}) for s, p in points.items()}
    span = span_of(curves)
    interior = [k for k in design if span[0] < k < span[1]]

    def errors_at(b: float) -> list[float]:
        return [math.log2(r.value / b)
                for r in (_read(_without(curve, b), _knots(curve)[b], fit) for curve in curves.values())
                if not math.isnan(r.value)]

    def answer(kind: str, budget: float, readings: list[Reading], error: float) -> None:
        readings = [r for r in readings if not math.isnan(r.value)]
        if len(readings) >= 2:
            out[kind].append((combine(readings, span=span, fit_error=error).contains(budget),
                              [math.log2(r.value / budget) for r in readings]))

    out: dict[str, list] = {"knot left out": [], "between knots": []}
    errors = {b: errors_at(b) for b in interior}
    for b in interior:
        others = [e for k, es in errors.items() if k != b for e in es]
        answer("knot left out", b, [_read(_without(curve, b), _knots(curve)[b], fit) for curve in curves.values()],
               _rms(others))
    error = _rms([e for es in errors.values() for e in es])
    for b in sorted(x for x in shared if x not in design and span[0] < x < span[1]):
        answer("between knots", b, [_read(curves[s], points[s][b], fit) for s in curves], error)
    return out


def fit_table(folders: list[Path]) -> pd.DataFrame:
    rows = []
    for folder in folders:
        for key, _base, curves, _final, check_rows in _curve_groups(load_table(folder)):
            points = {s: _knots(curve) for s, curve in curves.items()}
            for b, g in check_rows.groupby("budget"):
                for s, v in _finals(g).items():
                    if s in points:
                        points[s][float(b)] = v
            for design, knots in DESIGNS.items():
                for fit in [*FITS, POWER]:
                    for kind, answers in _answers(points, knots, fit).items():
                        if answers:
                            errors = [e for _, es in answers for e in es]
                            rows.append({"run": folder.name, "sweep": key[0], "width": key[2], "steps": key[3],
                                         "knots": design, "fit": fit, "known answer": kind,
                                         "cost (x steps)": round(sum(knots), 2),
                                         "held": sum(h for h, _ in answers), "of": len(answers),
                                         "rms log2 error": _rms(errors)})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    table = fit_table(parser.parse_args().folders)
    if table.empty:
        raise SystemExit("no budget curve in these folders")
    per_curve = table.assign(**{"rms log2 error": table["rms log2 error"].map(lambda e: f"{e:.3f}")})
    print(markdown_table(per_curve))
    total = table.groupby(["knots", "fit", "known answer"], sort=False).agg(
        held=("held", "sum"), of=("of", "sum"), rms=("rms log2 error", lambda e: float(np.sqrt(np.mean(e**2)))),
        cost=("cost (x steps)", "median")).reset_index()
    print()
    print(markdown_table(total.assign(rms=total["rms"].map(lambda e: f"{e:.3f}"))))


if __name__ == "__main__":
    main()
