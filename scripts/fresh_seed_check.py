"""A learning rate judged on fresh seeds: two runs of the same arms and seeds at different rates (each a sweep folder
with a ``results.csv``), every arm's mean final loss in each, their difference, and its smallest and largest per
seed (the seeds paired: each seed trains on the same bytes in both).

    python -m scripts.fresh_seed_check CHOSEN OTHER

Exits 1 where an arm's chosen rate loses more than ``--margin`` (nats/byte; the comparisons' target, 0.02) on the
mean: the check a rate rule must pass before its rates are committed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ablations.report.formatting import markdown_table
from ablations.report.tables import load_table


def finals(folder: Path) -> tuple[pd.DataFrame, str]:
    table = load_table(folder)
    rows = table[(table["metric"] == "val_loss") & (table["mode"] == "final")]
    rates = ", ".join(f"{r:g}" for r in sorted(rows["lr"].dropna().unique()))
    return rows.pivot_table(index="variant", columns="seed", values="value"), rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chosen", type=Path)
    parser.add_argument("other", type=Path)
    parser.add_argument("--margin", type=float, default=0.02)
    args = parser.parse_args(argv)
    (chosen, chosen_rates), (other, other_rates) = finals(args.chosen), finals(args.other)
    seeds = sorted(set(chosen.columns) & set(other.columns))
    arms = sorted(set(chosen.index) & set(other.index))
    diff = chosen.loc[arms, seeds] - other.loc[arms, seeds]
    frame = pd.DataFrame({"arm": arms,
                          f"chosen ({chosen_rates})": chosen.loc[arms, seeds].mean(axis=1).map("{:.3f}".format),
                          f"other ({other_rates})": other.loc[arms, seeds].mean(axis=1).map("{:.3f}".format),
                          "chosen − other": diff.mean(axis=1).map("{:+.4f}".format),
                          "per seed": [f"{lo:+.3f} to {hi:+.3f}" for lo, hi in zip(diff.min(axis=1), diff.max(axis=1),
                                                                                  strict=True)]})
    print(f"Mean final validation loss over seeds {', '.join(str(int(s)) for s in seeds)} (nats/byte):\n")
    print(markdown_table(frame))
    losing = [arm for arm, d in diff.mean(axis=1).items() if d > args.margin]
    if losing:
        print(f"\nThe chosen rate loses more than {args.margin:g} for: {', '.join(losing)}")
        return 1
    print(f"\nNo arm's chosen rate loses more than {args.margin:g} on these seeds.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
