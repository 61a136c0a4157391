"""What the compute multiplier costs against how precise it is, from one sweep trained with a generous curve.

    python scripts/multiplier_knee.py RUN_FOLDER

``RUN_FOLDER`` is a sweep run with ``train.budgets`` at its widest (e.g. ``[0.5,2,4]``) and ``train.budget_seeds``
at its largest (e.g. 5). For every smaller setting (the first n curve seeds, a subset of the budgets that still
holds 1) this reads each comparison's multiplier again from the same runs, as a run at that setting would have read
it, and prints one row per setting: the curve's training seconds (the budget runs' own ``budget_wall_time`` rows,
summed), the multiplier of each variant with its 95% interval and the interval's width as a factor (hi / lo; open
sides count as the curve's end), and whether the two calibration rows hold 1 and 2. The losses do not depend on the
machine's load; the seconds do (run it alone, or read them as the run's).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import pandas as pd

from ablations.quality.worth import worth
from ablations.report.formatting import markdown_table
from ablations.results.table import load


def subsets(budgets: list[float]) -> list[tuple[float, ...]]:
    """The budget sets to try: every subset of the extra budgets with at least one below 1 and one above."""
    out = []
    for k in range(2, len(budgets) + 1):
        for sub in itertools.combinations(sorted(budgets), k):
            if min(sub) < 1 < max(sub):
                out.append(sub)
    return out


def knee(table: pd.DataFrame) -> pd.DataFrame:
    budget_rows = table[table["metric"].isin(["budget_loss", "budget_wall_time"])]
    others = table[~table.index.isin(budget_rows.index)]
    budgets = sorted(float(b) for b in budget_rows["budget"].dropna().unique())
    curve_seeds = sorted(int(s) for s in budget_rows["seed"].dropna().unique())
    rows = []
    for subset in subsets(budgets):
        for n in range(2, len(curve_seeds) + 1):
            seeds = curve_seeds[:n]
            kept = budget_rows[budget_rows["budget"].isin(subset) & budget_rows["seed"].isin(seeds)]
            cost = pd.to_numeric(kept.loc[kept["metric"] == "budget_wall_time", "value"]).drop_duplicates().sum()
            w = worth(pd.concat([others, kept]))
            row = {"budgets": "[" + ", ".join(f"{b:g}" for b in subset) + "]", "curve seeds": n,
                   "curve seconds": round(float(cost))}
            for _, r in w.iterrows():
                width = r["k_steps_hi"] / r["k_steps_lo"] if r["k_steps_lo"] > 0 else float("nan")
                held = "" if pd.isna(r["expected"]) else \
                    f", holds {r['expected']:g}: {'yes' if r['calibrated'] else 'NO'}"
                row[r["variant"]] = f"{r['k_steps_text']} (width ×{width:.2g}{held})"
            rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    frame = knee(load(args.folder))
    print(markdown_table(frame))
    return 0


if __name__ == "__main__":
    sys.exit(main())
