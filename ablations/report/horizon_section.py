"""The report's section on the ``horizon`` sweep (``ablations.quality.horizon``): what each choice buys at each
training length, its trend, whether the verdict at the headline's bytes per parameter holds at the longest, and
decision accuracy between horizons."""

from __future__ import annotations

import pandas as pd

from ablations.quality import horizon
from ablations.quality.stats import CELL_FAMILIES
from ablations.report.flips import flip_labels
from ablations.report.formatting import markdown_table


def headline_bytes_per_param(worth: pd.DataFrame) -> float | None:
    """The bytes per parameter of the run's other multipliers (the headline's quality model), when it has any."""
    other = worth[~worth["sweep"].isin(CELL_FAMILIES)] if not worth.empty else worth
    values = other["bytes_per_param"].dropna() if not other.empty else pd.Series(dtype=float)
    return float(values.median()) if len(values) else None


def horizon_lines(summary: pd.DataFrame | None, table: pd.DataFrame, worth: pd.DataFrame) -> list[str]:
    """The section, when the run has a horizon sweep with a comparison."""
    rows = table[table["sweep"] == horizon.SWEEP]
    bpp = horizon.bytes_per_param(rows)
    if summary is None or bpp.empty:
        return []
    from ablations.quality.worth import seed_readings

    headline = headline_bytes_per_param(worth)
    per = horizon.horizon_table(summary, worth, rows, seed_readings(rows),
                                float(bpp.min()) if headline is None else headline, flip_labels(rows))
    if per.empty:
        return []
    spans = ", ".join(f"{int(s)} steps: {b:.3g}" for s, b in bpp.items())
    widths = pd.to_numeric(rows["d_model"], errors="coerce").dropna().unique()
    near = ("the shortest horizon (no headline multipliers in this run)" if headline is None
            else f"the horizon nearest the headline's {headline:.3g} bytes per parameter")
    lines = ["### What a choice buys as the model trains longer (`horizon`)", "",
             f"The all sweep's points at quality width {', '.join(str(int(w)) for w in widths)} trained for "
             f"{len(bpp)} horizons; training bytes per parameter of the baseline ({spans}). Each horizon is its own "
             "Holm family with its own budget curve and known answers (the known-answer table above). Each cell: "
             "Δ loss against the baseline at that horizon [Holm-level interval], its verdict, and k, the multiplier "
             "in FLOPs [95% CI, the fit's error included]. Trend: k's factor per doubling of bytes per parameter "
             f"(least squares over every seed and horizon). The last column compares the verdict at {near} with "
             "the longest's.", "", markdown_table(per), ""]
    settled = horizon.settled_horizon(worth, bpp)
    if settled is not None:
        lines += [settled.line(flip_labels(rows)), ""]
    accuracy = horizon.accuracy(rows)
    if not accuracy.empty:
        lines += ["Decision accuracy, as DataDecide defines it: of every pair of arms (the baseline among them), the "
                  "share a shorter horizon orders by mean final loss as the longest does. A pair whose paired "
                  "difference at the longest horizon has a 95% interval holding 0 is a null effect (its order is a "
                  "coin flip), counted apart. DataDecide's figures rank pretraining recipes at 4M to 1B parameters "
                  "against 1B; these are horizons of one model of about 0.2M parameters.", "",
                  markdown_table(accuracy), ""]
    return lines
