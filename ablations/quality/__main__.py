"""``python -m ablations.quality DIR [DIR ...]``: the seed summary of finished sweeps, as text.

Per sweep: final validation loss (mean ± 95% CI over seeds, paired difference to the baseline and verdict),
extrapolation loss per evaluation length, and the summed wall time of the sweep's quality runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from ablations.quality.stats import summarize
from ablations.results.store import TABLE, collect


def _load(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / TABLE) if (folder / TABLE).is_file() else collect(folder)


def _fmt(x: float, sign: bool = False) -> str:
    return "—" if pd.isna(x) else f"{x:+.3f}" if sign else f"{x:.3f}"


def report(table: pd.DataFrame) -> str:
    lines = []
    summary = summarize(table)
    for sweep, s in summary.groupby("sweep", sort=False):
        rows = table[(table["sweep"] == sweep) & (table["metric"] == "train_wall_time")]
        lines += [f"## {sweep}: {len(rows)} quality runs, {rows['value'].sum() / 60:.1f} min of training", ""]
        for (metric, seq_len), g in s.groupby(["metric", "seq_len"], sort=False):
            lines.append(f"{metric} at {int(seq_len)} bytes (nats/byte):")
            for _, r in g.iterrows():
                ci = f"[{_fmt(r['ci_lo'])}, {_fmt(r['ci_hi'])}]"
                diff = ""
                if pd.notna(r["diff"]):
                    diff = f"{_fmt(r['diff'], True)} [{_fmt(r['diff_lo'], True)}, {_fmt(r['diff_hi'], True)}]"
                lines.append(f"  {r['variant']:<18} {_fmt(r['mean'])} ± CI {ci:<16} n={r['n']}  "
                             f"vs {r['reference']}: {diff:<26} {r['verdict']}")
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(report(pd.concat([_load(Path(a)) for a in argv], ignore_index=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
