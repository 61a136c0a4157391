"""The fits of the baseline's loss-versus-compute curve tried against the known answers it must interpolate.

For each results folder (a run with a budget curve; the horizon's reference has between-knot budgets too), each
curve (sweep, text, width, steps) and each fit, how many known answers hold (their 95% interval, built as the report
builds it: over seeds, with the fit's left-out-knot error added) and the root mean square error of the seeds'
readings in log2:

- ``knot left out``: each seed's interior knot read on its own curve without it (a two-doubling gap on knots a
  doubling apart);
- ``between knots``: the baseline trained at a budget between two knots, read on its own seed's curve (a
  one-doubling gap: what a variant's reading spans);
- ``dense, knot left out``: the between-knot budgets taken as knots too (half a doubling apart), each interior knot
  left out in turn (a one-doubling gap).

The fits: ``ablations.quality.multiplier.FITS`` (straight in log compute; PCHIP, monotone through every knot) and a
per-seed saturating power law L = E + A c^-alpha (``scipy.optimize.curve_fit``), tried here only. The cost column
is the baseline's training per curve seed, in multiples of the point's steps.

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
    c, y = np.asarray(curve.budgets, dtype=float), np.asarray(curve.losses, dtype=float)

    def law(x: np.ndarray, e: float, a: float, alpha: float) -> np.ndarray:
        return e + a * x ** -alpha
    try:
        (e, a, alpha), _ = curve_fit(law, c, y, p0=(y.min() * 0.9, y.max() - y.min() * 0.9, 0.5),
                                     bounds=([0, 1e-9, 1e-3], [y.min(), np.inf, 10]), maxfev=20000)
    except RuntimeError:
        return Reading(math.nan)
    if loss > law(c[0], e, a, alpha):
        return Reading(curve.budgets[0], BELOW)
    if loss < law(c[-1], e, a, alpha):
        return Reading(curve.budgets[-1], ABOVE)
    return Reading(float((a / (loss - e)) ** (1 / alpha)))


def _read(curve: Curve, loss: float, fit: str) -> Reading:
    return _power_invert(curve, loss) if fit == POWER else invert(curve, loss, fit)


def _knots(curve: Curve) -> dict[float, float]:
    return dict(zip(curve.budgets, curve.losses, strict=True))


def _without(curve: Curve, budget: float) -> Curve:
    return Curve.of({b: v for b, v in _knots(curve).items() if b != budget})


def _answers(curves: dict[int, Curve], checks: dict[float, dict[int, float]], fit: str) -> dict[str, list]:
    """Per kind of known answer: (holds, log2 errors) of each answer on these curves, each interval built as the
    report builds it (``ablations.quality.worth``): the seeds' t interval with the fit's left-out-knot error added,
    a left-out knot's from the other interior knots."""
    out: dict[str, list] = {"knot left out": [], "between knots": [], "dense, knot left out": []}

    def left_out_errors(cs: dict[int, Curve]) -> dict[float, list[float]]:
        bottom, top = span_of(cs)
        shared = set.intersection(*(set(c.budgets) for c in cs.values()))
        return {b: [math.log2(r.value / b) for r in (_read(_without(c, b), _knots(c)[b], fit) for c in cs.values())
                    if not math.isnan(r.value)] for b in sorted(x for x in shared if bottom < x < top)}

    def rms(errors: list[float]) -> float:
        return float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0

    def answer(kind: str, budget: float, readings: list[Reading], span: tuple[float, float], error: float) -> None:
        readings = [r for r in readings if not math.isnan(r.value)]
        if len(readings) >= 2:
            out[kind].append((combine(readings, span=span, fit_error=error).contains(budget),
                              [math.log2(r.value / budget) for r in readings]))

    def loo(kind: str, cs: dict[int, Curve]) -> None:
        errors = left_out_errors(cs)
        for b in errors:
            others = [e for k, es in errors.items() if k != b for e in es]
            answer(kind, b, [_read(_without(c, b), _knots(c)[b], fit) for c in cs.values()], span_of(cs), rms(others))

    loo("knot left out", curves)
    error = rms([e for es in left_out_errors(curves).values() for e in es])
    for budget, losses in checks.items():
        answer("between knots", budget, [_read(curves[s], losses[s], fit) for s in curves if s in losses],
               span_of(curves), error)
    if checks:
        dense = {s: Curve.of({**_knots(c), **{b: v[s] for b, v in checks.items() if s in v}})
                 for s, c in curves.items()}
        loo("dense, knot left out", dense)
    return out


def fit_table(folders: list[Path]) -> pd.DataFrame:
    rows = []
    for folder in folders:
        for key, _base, curves, _final, check_rows in _curve_groups(load_table(folder)):
            checks = {float(b): _finals(g) for b, g in check_rows.groupby("budget")}
            knots = set.intersection(*(set(c.budgets) for c in curves.values()))
            cost = {"knot left out": sum(knots), "between knots": sum(knots) + sum(checks),
                    "dense, knot left out": sum(knots) + sum(checks)}
            for fit in [*FITS, POWER]:
                for kind, answers in _answers(curves, checks, fit).items():
                    if answers:
                        errors = [e for _, es in answers for e in es]
                        rows.append({"run": folder.name, "sweep": key[0], "width": key[2], "steps": key[3],
                                     "fit": fit, "known answer": kind, "cost (x steps)": cost[kind],
                                     "held": sum(h for h, _ in answers), "of": len(answers),
                                     "rms log2 error": float(np.sqrt(np.mean(np.square(errors))))})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    table = fit_table(parser.parse_args().folders)
    if table.empty:
        raise SystemExit("no budget curve in these folders")
    per_curve = table.assign(**{"rms log2 error": table["rms log2 error"].map(lambda e: f"{e:.3f}")})
    print(markdown_table(per_curve))
    total = table.groupby(["fit", "known answer"], sort=False).agg(
        held=("held", "sum"), of=("of", "sum"), rms=("rms log2 error", lambda e: float(np.sqrt(np.mean(e**2)))),
        cost=("cost (x steps)", "median")).reset_index()
    print()
    print(markdown_table(total.assign(rms=total["rms"].map(lambda e: f"{e:.3f}"))))


if __name__ == "__main__":
    main()
