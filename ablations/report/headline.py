"""The headline table: each flip of the ``all`` sweep against the GPT-2 block, time and loss, from a results table.

The README, ``docs/index.md`` and ``docs/findings.md`` show it; ``tests/report/test_headline.py`` checks that each
holds what this module builds from ``results/reference/results.csv``, so a rebuilt reference cannot leave them stale.
``python -m ablations.report.headline FOLDER`` prints it.

Time cells are the median paired ratio with its 95% interval (``ablations.measure.intervals``); loss cells the
difference to GPT-2 paired by seed at its Holm level, with the seeds it took and what answered it
(``ablations.quality.seeds``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ablations.config.variants import arch_from_row
from ablations.report.comparison import comparison
from ablations.report.formatting import fmt_p, markdown_table, number_word
from ablations.report.sections import headline_cells, summarize_quality
from ablations.report.tables import BASELINE, ReportError, load_table, split
from components import ArchConfig, choices
from components.choice import Choice

SWEEP = "all"
LLAMA2 = "llama2"
# How a stop reads in a headline cell (``ablations.quality.seeds``: found, bounded at the target, or the budget).
ANSWERS = {"difference": "", "bounded": " (none as large as {target:g})", "budget": " (budget spent, not answered)"}


def _moved(arch: ArchConfig) -> list[tuple[int, Choice]]:
    """The declared choices ``arch`` holds at another value than GPT-2's, with their place in the declarations."""
    return [(i, c) for i, c in enumerate(choices()) if not c.has(arch, c.gpt2)]


def flip_name(name: str, arch: ArchConfig) -> str | None:
    """``LayerNorm → RMSNorm`` for a one-choice flip of GPT-2's block, ``all five (Llama-2's block)`` for
    Llama-2's; None for anything else (two choices moved, say), which a headline has no row for."""
    moved = [c for _, c in _moved(arch)]
    if name == LLAMA2:
        return f"all {number_word(len(moved))} (Llama-2's block)"
    return moved[0].flip_text(getattr(arch, moved[0].group).name) if len(moved) == 1 else None


def _what(r: pd.Series) -> str:
    """The flip, with what it changes beyond its name: parameters when they differ, the KV cache when it shrinks."""
    notes = []
    if r["params_baseline"] and r["params_delta"]:
        notes.append(f"params {100 * r['params_delta'] / r['params_baseline']:+.2g}%".replace("-", "−"))
    kv = r.get("kv_per_token_ratio", np.nan)
    if not pd.isna(kv) and kv < 1:
        notes.append(f"KV cache {1 / kv:.3g}× smaller")
    label = flip_name(str(r["variant"]), arch_from_row(r))
    return f"{label} ({', '.join(notes)})" if notes else str(label)


def signed(x: float) -> str:
    """A loss difference with its sign, a true minus."""
    return f"{x:+.3f}".replace("-", "−")


def _loss(q: pd.Series | None) -> str:
    if q is None or pd.isna(q["diff"]):
        return "—"
    answer = ANSWERS.get(str(q.get("stopped")), "").format(target=q.get("target_mde"))
    return (f"{signed(q['diff'])} [{signed(q['diff_lo'])}, {signed(q['diff_hi'])}], Holm p {fmt_p(q['p_holm'])}, "
            f"{int(q['n'])} seeds: {q['verdict']}{answer}")


def headline_table(table: pd.DataFrame, sweep: str = SWEEP) -> str:
    """The markdown table: one row per one-choice flip of ``sweep`` in the declarations' order, then Llama-2's
    block; time ratios and loss difference."""
    measured, quality, _ = split(table[table["sweep"] == sweep])
    if measured.empty:
        raise ReportError(f"no timed rows of sweep {sweep!r} in the table")
    cmp = comparison(measured)
    summary, _ = summarize_quality(table[table["sweep"] == sweep]) if not quality.empty else (None, "")
    loss = summary[summary["metric"] == "val_loss"].set_index("variant") if summary is not None else None
    base = cmp[cmp["variant"] == BASELINE]
    if base.empty:
        raise ReportError(f"sweep {sweep!r} has no {BASELINE} point to read the table against")
    b = base.iloc[0]
    if pd.isna(b["decode_ctx"]):
        raise ReportError(f"sweep {sweep!r} has no decode rows: the headline's decode column needs them")
    shape, ctx, batch = b["shape"], int(b["decode_ctx"]), int(b["decode_batch"])
    base_loss = f" ({loss.loc[BASELINE, 'mean']:.3f})" if loss is not None and BASELINE in loss.index else ""
    flips = cmp[[r["variant"] != BASELINE and flip_name(r["variant"], arch_from_row(r)) is not None
                 for _, r in cmp.iterrows()]]
    flips = flips.iloc[np.argsort([_order(r) for _, r in flips.iterrows()], kind="stable")]
    return markdown_table(pd.DataFrame({
        "choice": [_what(r) for _, r in flips.iterrows()],
        f"block fwd+bwd time ({shape})": headline_cells(flips, "train"),
        f"decode step, context {ctx}, batch {batch}": headline_cells(flips, "decode"),
        f"val loss Δ vs GPT-2{base_loss}": [_loss(loss.loc[v] if loss is not None and v in loss.index else None)
                                            for v in flips["variant"]],
    }))


def _order(r: pd.Series) -> int:
    """The declarations' order (positions, norm, FFN, KV heads, bias, ...), Llama-2's block last."""
    return len(choices()) if r["variant"] == LLAMA2 else _moved(arch_from_row(r))[0][0]


def baseline_line(table: pd.DataFrame, sweep: str = SWEEP) -> str:
    """The baseline against itself (A/A): its intervals, which must hold 1."""
    cmp = comparison(split(table[table["sweep"] == sweep])[0])
    b = cmp[cmp["variant"] == BASELINE]
    return f"fwd+bwd {headline_cells(b, 'train')[0]}, decode {headline_cells(b, 'decode')[0]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablations.report.headline", description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="a folder with results.csv (results/reference)")
    parser.add_argument("--sweep", default=SWEEP)
    args = parser.parse_args(argv)
    try:
        table = load_table(args.folder)
        print(headline_table(table, args.sweep))
        print(f"\nThe baseline against itself: {baseline_line(table, args.sweep)}")
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
