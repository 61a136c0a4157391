"""``python -m ablations.report.progress DIR [DIR ...] --out OUT``: each choice's compute multiplier against how far
the baseline's training went (its final loss) and against bytes per parameter, over every cell of the sweeps given
(``ablations.quality.progress``). Writes ``OUT/README.md`` (the cells and each choice's correlations) and
``OUT/k-vs-progress.png``/``.svg``; prints the markdown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ablations.config.errors import Fault, UsageError, command, os_error_line, prog
from ablations.quality.progress import cells, correlations
from ablations.quality.worth import worth
from ablations.report.axes import log_ratio
from ablations.report.figure_style import STYLE
from ablations.report.figures import save
from ablations.report.formatting import markdown_table
from ablations.report.tables import ReportError, combine, load_table
from ablations.results.durable import write_atomic

STEM = "k-vs-progress"


def figure(frame: pd.DataFrame) -> Figure:
    """Two panels sharing the y axis (k in FLOPs, log): against the baseline's final loss, and against bytes per
    parameter (log); one colour per choice, 95% intervals."""
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    for i, (variant, g) in enumerate(frame.groupby("variant", sort=False)):
        k = g["k_flops"].to_numpy(float)
        lo = np.where(np.isnan(g["k_flops_lo"].to_numpy(float)), k, g["k_flops_lo"].to_numpy(float))
        hi = np.where(np.isnan(g["k_flops_hi"].to_numpy(float)), k, g["k_flops_hi"].to_numpy(float))
        for ax, x in ((left, g["baseline_loss"]), (right, g["bytes_per_param"])):
            ax.errorbar(x.to_numpy(float), k, yerr=[k - lo, hi - k], fmt="o", capsize=2, color=f"C{i % 10}",
                        label=str(variant))
    for ax in (left, right):
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
    log_ratio(left, "y")
    right.set_xscale("log")
    left.set_xlabel("the baseline's final validation loss (nats/byte): how far its training went")
    right.set_xlabel("training bytes per parameter (log)")
    left.set_ylabel("compute multiplier k in FLOPs (×)")
    left.invert_xaxis()  # further trained to the right, in both panels
    right.legend(fontsize=7, ncol=2)
    fig.suptitle("What each choice buys against how far training went")
    return fig


def markdown(frame: pd.DataFrame, sources: list[Path]) -> str:
    r = correlations(frame)
    shown = frame.assign(corpus=frame["corpus"].astype(str).str[:12],
                         **{"bytes/param": frame["bytes_per_param"].map(lambda x: f"{x:.3g}"),
                            "baseline loss": frame["baseline_loss"].map(lambda x: f"{x:.3f}")})
    shown = shown[["variant", "sweep", "corpus", "d_model", "train_steps", "bytes/param", "baseline loss",
                   "k_flops_text"]].rename(columns={"k_flops_text": "k in FLOPs [95% CI]"})
    corr = r.assign(**{c: r[c].map(lambda x: "—" if pd.isna(x) else f"{x:+.2f}")
                       for c in ("r with baseline loss", "r with log bytes/param")})
    return "\n".join([
        "# Compute multiplier against how far training went", "",
        f"From {', '.join(f'`{s}`' for s in sources)} (`python -m ablations.report.progress`). Pearson's r of log k "
        "with the baseline's final loss (negative: k grows as training goes further) and with log bytes per "
        "parameter, over each choice's cells:", "", markdown_table(corr), "", "The cells:", "",
        markdown_table(shown.reset_index(drop=True)), "", f"![k against progress]({STEM}.png)", ""])


@command("progress")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("progress"),
                                     description="Compute multipliers against training progress.")
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="sweep folders holding results.csv")
    parser.add_argument("--out", type=Path, required=True, help="the folder README.md and the figure go to")
    args = parser.parse_args(argv)
    try:
        table = combine([load_table(f) for f in args.folders])
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    frame = cells(worth(table), table)
    if frame.empty:
        raise UsageError("no compute multiplier in these folders (a quality sweep with train.budgets)")
    text = markdown(frame, args.folders)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out / "README.md", lambda f: f.write(text.encode()))
        with matplotlib.rc_context(STYLE):
            save(figure(frame), args.out, STEM)
    except OSError as exc:
        raise Fault(os_error_line(exc)) from None
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
