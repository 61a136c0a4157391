"""``blockbench quality DIR [DIR ...]`` (``python -m ablations.quality``): the seed summary of finished sweeps.

Per sweep, as text: final validation loss (mean ± 95% CI over seeds; the paired difference to each reference with its
interval at the Holm-adjusted level, p and Holm p, verdict and minimum detectable effect), extrapolation loss per
evaluation length, and the summed wall time of the sweep's quality runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ablations.config.errors import UsageError, command, prog
from ablations.quality.inference import ALPHA
from ablations.quality.seeds import STOPS
from ablations.quality.stats import by_variant_then_width, several_lengths, several_widths, summarize
from ablations.results.table import TableError, load


def _fmt(x: float, sign: bool = False) -> str:
    return "—" if pd.isna(x) else f"{x:+.3f}" if sign else f"{x:.3f}"


def _p(x: float) -> str:
    return "<0.0001" if x < 1e-4 else f"{x:.2g}"


def _comparison(r: pd.Series) -> str:
    """``-0.043 [-0.071, -0.015] at 98.3%  p 0.004, Holm p 0.008  better; could have detected |d| >= 0.021``."""
    if pd.isna(r["diff"]):
        return r["verdict"]
    text = f"{_fmt(r['diff'], True)}"
    if pd.notna(r["diff_lo"]):
        text += (f" [{_fmt(r['diff_lo'], True)}, {_fmt(r['diff_hi'], True)}] at {100 * (1 - r['alpha_adjusted']):.3g}%"
                 f"  p {_p(r['p'])}, Holm p {_p(r['p_holm'])}")
    detectable = f"could have detected |d| >= {r['mde']:.2g}" if pd.notna(r["mde"]) else r["mde_note"]
    stopped = r.get("stopped")
    rule = f"  [{STOPS[stopped]}, {int(r['looks'])} looks]" if isinstance(stopped, str) and stopped in STOPS else ""
    return (f"{text}  {r['verdict']}" + (f"; {detectable}" if isinstance(detectable, str) and detectable else "")
            + rule)


def report(table: pd.DataFrame) -> str:
    lines = []
    summary = summarize(table)
    for sweep, s in summary.groupby("sweep", sort=False):
        rows = table[(table["sweep"] == sweep) & (table["metric"] == "train_wall_time")]
        lines += [f"## {sweep}: {len(rows)} quality runs, {rows['value'].sum() / 60:.1f} min of training", ""]
        # A scale or horizon sweep: name each row's width or steps, and list a variant's together.
        widths, lengths = several_widths(s), several_lengths(s)
        s = by_variant_then_width(s)
        for (metric, seq_len), g in s.groupby(["metric", "seq_len"], sort=False):
            m = int(g["family"].max()) if g["family"].notna().any() else 0
            holm = (f"; verdicts by Holm-Bonferroni across the {m} comparison{'s' if m != 1 else ''} here "
                    f"(family-wise alpha {ALPHA:g}), intervals at each one's adjusted level") if m else ""
            unit = str(g["unit"].dropna().iloc[0]) if g["unit"].notna().any() else "nats/byte"  # nats/token on tokens
            lines.append(f"{metric} at {int(seq_len)} {unit.split('/')[-1]}s ({unit}){holm}:")
            for _, r in g.iterrows():
                ci = f"[{_fmt(r['ci_lo'])}, {_fmt(r['ci_hi'])}]"
                name = (f"{r['variant']}" + (f" d={int(r['d_model'])}" if widths else "")
                        + (f" {int(r['train_steps'])} steps" if lengths else ""))
                lines.append(f"  {name:<18} {_fmt(r['mean'])} ± CI {ci:<16} n={r['n']}  "
                             f"vs {r['reference']}: {_comparison(r)}")
            lines.append("")
    return "\n".join(lines)


@command("quality")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("quality"), description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="sweep folder(s) holding results.csv")
    args = parser.parse_args(argv)
    try:
        tables = [load(folder) for folder in args.folders]
    except TableError as exc:
        raise UsageError(str(exc)) from None
    print(report(pd.concat(tables, ignore_index=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
