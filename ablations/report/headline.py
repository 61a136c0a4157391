"""The headline table: what each flip of the ``all`` sweep buys against the GPT-2 block, from one or more results
tables (the reference's, and the ``transfer`` sweep's when given for the transfer column).

It is the "what each choice buys" table (``ablations.report.buys``), restricted to the ``all`` sweep: one row per
choice in the declarations' order, Llama-2's block last; docs/findings.md shows it whole
(``python -m ablations.report.headline FOLDER...`` prints it). The README's "What it found" holds the verdict block,
the known answers in one sentence and ``README_COLUMNS`` of the table, built from ``README_SOURCES``
(``python -m ablations.report.headline --readme --write``). ``tests/report/test_headline.py`` checks both copies
against what this module builds from the committed reference, so a rebuilt reference cannot leave them stale.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from ablations.quality import transfer
from ablations.quality.horizon import Settled
from ablations.quality.worth import MISSES, known_verdict, untrusted, worth
from ablations.report.buys import buys_frame
from ablations.report.comparison import comparison
from ablations.report.formatting import markdown_table, signed
from ablations.report.quality_sections import summarize_quality
from ablations.report.tables import BASELINE, ReportError, load_table, split
from ablations.report.timing_sections import headline_cells
from ablations.report.transfer_section import transfer_lines
from ablations.report.verdicts import Answer, Loss, answers, at_settled_horizon, verdict_block
from ablations.results.report_inputs import ReportInputs, missing, read_report_inputs

SWEEP = "all"
# Where the README sends a reader for the known answers listed one by one.
FINDINGS_KNOWN = "docs/findings.md#what-it-found-reference-run-cpu"
# The folders the README's findings are built from: the reference, its transfer study, the full-schedule run at the
# answer's horizon, the H100 runs.
README_SOURCES = ("results/reference", "results/reference/all_tuned", "results/reference/lr_scan_horizon",
                  "results/reference/horizon_tuned/cosine_40",
                  "results/reference/transfer",
                  "results/reference/cuda/norm", "results/reference/cuda/kv")
# The horizon sweep whose lengths choose the answer's horizon (``verdicts.at_settled_horizon``). It trains under wsd,
# a stand-in for full schedules at every length; the answer is read at the length it chose from the full cosine
# schedule's run in README_SOURCES (``ablations.report.schedule_check`` compares the two).
ANSWER_HORIZON = "results/reference/horizon_tuned"
# The README's findings table: the headline's columns a reader needs first; docs/findings.md shows every column.
README_COLUMNS = ("choice", "params", "train step ×", "decode ×", "Δ loss [CI]", "compute multiplier [CI]", "transfer")


def _rows(table: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """The sweep's rows and the transfer sweep's, the two the table reads."""
    return table[table["sweep"].isin([sweep, transfer.SWEEP])]


def multipliers_of(table: pd.DataFrame, sweep: str = SWEEP, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """The compute multipliers (``worth``) of the sweep's and the transfer sweep's comparisons, with their
    calibration rows; an empty frame where neither trained. ``summary``: those rows' final-loss summary
    (``summarize_quality``), when the caller has it already; it sets each k's Holm level."""
    rows = _rows(table, sweep)
    if split(rows)[1].empty:
        return pd.DataFrame()
    return worth(rows, summarize_quality(rows)[0] if summary is None else summary)


def headline_frame(table: pd.DataFrame, inputs: ReportInputs, sweep: str = SWEEP,
                   multipliers: pd.DataFrame | None = None) -> pd.DataFrame:
    """The headline's rows, formatted (``buys.buys_frame`` restricted to ``sweep``); ``inputs``: those recorded
    beside the rows (``read_report_inputs``)."""
    rows = _rows(table, sweep)
    measured, quality, _ = split(rows[rows["sweep"] == sweep])
    if measured.empty:
        raise ReportError(f"no timed rows of sweep {sweep!r} in the table")
    cmp = comparison(measured)
    base = cmp[cmp["variant"] == BASELINE]
    if base.empty:
        raise ReportError(f"sweep {sweep!r} has no {BASELINE} point to read the table against")
    if base["decode_ctx"].isna().all():
        raise ReportError(f"sweep {sweep!r} has no decode rows: the headline's decode column needs them")
    summary = summarize_quality(rows)[0] if not split(rows)[1].empty else None
    if multipliers is None:
        multipliers = multipliers_of(table, sweep, summary)
    _, verdicts = transfer_lines(summary, rows, multipliers, inputs.no_worse_margin)
    frame = buys_frame(rows, cmp, summary, multipliers, inputs, verdicts)
    frame = frame[frame["sweep"] == sweep]
    if frame.empty:
        raise ReportError(f"sweep {sweep!r} compares no variant with {BASELINE}")
    return frame.drop(columns=["sweep", "variant", "order"])


def headline_table(table: pd.DataFrame, inputs: ReportInputs, sweep: str = SWEEP,
                   multipliers: pd.DataFrame | None = None) -> str:
    """The markdown table: cost (parameters, FLOPs, train-step and decode ratios, KV bytes per token) and quality
    (Δ loss, compute multiplier, time to loss measured and the full-size scenario, transfer, the published verdict)
    per flip. ``multipliers``: ``multipliers_of(table, sweep)``, when the caller has it already."""
    return markdown_table(headline_frame(table, inputs, sweep, multipliers))


def readme_table(table: pd.DataFrame, inputs: ReportInputs, found: list[Answer], sweep: str = SWEEP,
                 multipliers: pd.DataFrame | None = None) -> str:
    """The README's findings table: ``README_COLUMNS`` of the headline for the cost, and the loss and compute
    multiplier of the answer the verdicts read (``found``: each arm at its own rate, at the settled or longest
    horizon), not the headline sweep's own; a choice only the answer reads gets a row of its own, before Llama-2's
    block (docs/findings.md shows the whole headline table)."""
    frame = headline_frame(table, inputs, sweep, multipliers)[list(README_COLUMNS)].copy()
    losses = {a.choice: a.loss for a in in_answer_regime(found)}
    extra = pd.DataFrame([{"choice": c} for c in losses if c not in set(frame["choice"])], columns=frame.columns)
    frame = pd.concat([frame.iloc[:-1], extra, frame.iloc[-1:]], ignore_index=True).fillna("—")
    frame["Δ loss [CI]"] = [_loss_cell(losses.get(c)) for c in frame["choice"]]
    frame["compute multiplier [CI]"] = [losses[c].k if c in losses and losses[c].k else "—" for c in frame["choice"]]
    return markdown_table(frame)


def _loss_cell(loss: Loss | None) -> str:
    if loss is None:
        return "—"
    return f"{signed(loss.diff)} [{signed(loss.lo)}, {signed(loss.hi)}] {loss.verdict}"


def found_answers(table: pd.DataFrame, settled: Settled | None = None) -> list[Answer]:
    """Every choice's answer the verdict block reads from ``table`` (``verdicts.answers``); ``settled``: the horizon
    another table chose (``answer_horizon``)."""
    measured, quality, _ = split(table)
    summary = summarize_quality(table)[0] if not quality.empty else None
    return answers(table, comparison(measured), summary,
                   worth(table, summary) if not quality.empty else pd.DataFrame(), settled)


def answer_horizon(folder: Path) -> Settled | None:
    """The horizon the sweep in ``folder`` settles on (``verdicts.at_settled_horizon``); None where it has none."""
    table = load_table(folder)
    quality = split(table)[1]
    if quality.empty:
        return None
    return at_settled_horizon(table, summarize_quality(table)[0], worth(table)).settled


def in_answer_regime(found: list[Answer]) -> list[Answer]:
    """The answers whose loss is read in the regime most of them share (the answer's: the verdict block's lines
    name any other), so that one table column never mixes regimes."""
    regimes = Counter(a.loss.where for a in found if a.loss is not None)
    if not regimes:
        return []
    regime = regimes.most_common(1)[0][0]
    return [a for a in found if a.loss is not None and a.loss.where == regime]


def verdict_lines(found: list[Answer], inputs: ReportInputs) -> list[str]:
    """The verdict block (``ablations.report.verdicts``) of ``found``, as the README shows it."""
    # The README has its own heading, and is the answer.
    return verdict_block(found, inputs.no_worse_margin, answer_link=False)[2:]


def baseline_line(table: pd.DataFrame, sweep: str = SWEEP, multipliers: pd.DataFrame | None = None) -> str:
    """The known answers: the baseline against itself (its time intervals must hold 1) and, where the sweep trained
    the baseline's curve, the multiplier's (``worth``: each must hold its multiple), then the regime the multipliers
    are read in (bytes per parameter, the baseline's loss drop per doubling). ``multipliers``:
    ``multipliers_of(table, sweep)``, when the caller has it already."""
    rows = _rows(table, sweep)
    cmp = comparison(split(rows[rows["sweep"] == sweep])[0])
    b = cmp[cmp["variant"] == BASELINE]
    line = f"fwd+bwd {headline_cells(b, 'train')[0]}, decode {headline_cells(b, 'decode')[0]}"
    if multipliers is None:
        multipliers = multipliers_of(table, sweep)
    # The transfer sweep's rows are in the frame too (for the table's transfer column): this line is the sweep's.
    cal = multipliers[multipliers["sweep"] == sweep] if not multipliers.empty else multipliers
    if not cal.empty:
        regime = cal.iloc[0]
        cal = cal[cal["expected"].notna()].sort_values("expected")
        line += "".join(f"; compute multiplier, {r['checks']} at {r['expected']:.3g}×: {r['k_steps_text']} "
                        f"({_shouted(known_verdict(r['calibrated']))})" for _, r in cal.iterrows())
        failed = untrusted(cal)["calibrated"].map(known_verdict)
        if not failed.empty:
            why = "a known answer misses" if (failed == MISSES).any() else "a known answer has one seed, no interval"
            line = f"**the compute multipliers are not trusted** ({why}); " + line
        line += (f". The multipliers are read at {regime['bytes_per_param']:.3g} training bytes per parameter, where "
                 f"the baseline's loss still drops {regime['drop_per_doubling']:.2f} nats/byte per doubling of "
                 "compute")
    return line


def known_answers_sentence(table: pd.DataFrame, found: list[Answer], sweep: str = SWEEP) -> str:
    """The known answers in one sentence, for the README: GPT-2's block timed against itself in the headline sweep,
    and how many of the compute multiplier's hold on the curves of the sweeps the answer's losses come from, linked
    to where each is listed."""
    rows = _rows(table, sweep)
    cmp = comparison(split(rows[rows["sweep"] == sweep])[0])
    b = cmp[cmp["variant"] == BASELINE]
    timing_holds = all(lo <= 1 <= hi for lo, hi in b[["train_ci_lo", "train_ci_hi"]].to_numpy()) and \
        all(lo <= 1 <= hi for lo, hi in b[["decode_ci_lo", "decode_ci_hi"]].dropna().to_numpy())
    trained = list(dict.fromkeys(a.trained_in for a in in_answer_regime(found) if a.trained_in is not None))
    curves = [m[(m["sweep"] == s) & m["expected"].notna()] for s in trained
              if not (m := multipliers_of(table, s)).empty]
    cal = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    held = len(cal) - len(untrusted(cal)) if not cal.empty else 0
    timing = ("GPT-2's block timed against itself reads 1 within its interval" if timing_holds
              else "**GPT-2's block timed against itself misses 1**")
    where = f" on the {' and '.join(trained)} sweep's curves" if trained else ""
    curve = (f"the compute multiplier's {held} of {len(cal)} known answers hold{where}" if not cal.empty else
             "no known answers for the compute multiplier")
    return f"Known answers: {timing}; {curve} ([what they are]({FINDINGS_KNOWN}))."


def _shouted(verdict: str) -> str:
    """A known answer's verdict as the headline line prints it: a miss in capitals, so it is not read past."""
    return verdict.upper() if verdict == MISSES else verdict


def readme_text(table: pd.DataFrame, inputs: ReportInputs, sweep: str = SWEEP, settled: Settled | None = None) -> str:
    """What the README's "What it found" holds between its markers: the verdicts, the known answers in a sentence,
    the findings table (cost from ``sweep``, loss from the verdicts' answer, read at ``settled``'s horizon when
    given)."""
    found = found_answers(table, settled)
    return "\n".join([*verdict_lines(found, inputs), known_answers_sentence(table, found, sweep), "",
                      readme_table(table, inputs, found, sweep)])


def readme_findings(root: Path, sweep: str = SWEEP) -> str:
    """``readme_text`` of ``README_SOURCES`` under ``root``, at the horizon ``ANSWER_HORIZON`` settles on."""
    return readme_text(*load_sources([root / f for f in README_SOURCES]), sweep, answer_horizon(root / ANSWER_HORIZON))


# The README's findings lie between these two lines; ``--readme --write`` replaces what is between them.
README_START = "<!-- findings: python -m ablations.report.headline --readme -->"
README_END = "<!-- /findings -->"


def with_findings(readme: str, findings: str) -> str:
    """``readme`` with ``findings`` between its markers."""
    if README_START not in readme or README_END not in readme:
        raise ReportError(f"the README has no {README_START} ... {README_END} block to fill")
    head, rest = readme.split(README_START, 1)
    return f"{head}{README_START}\n{findings}\n{README_END}{rest.split(README_END, 1)[1]}"


def load_sources(folders: list[Path]) -> tuple[pd.DataFrame, ReportInputs]:
    """The folders' rows in one table, and the inputs recorded beside the first that holds them."""
    inputs = read_report_inputs(folders)
    if inputs is None:
        raise ReportError(missing(folders))
    return pd.concat([load_table(f) for f in folders], ignore_index=True), inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablations.report.headline", description=__doc__.split("\n")[0])
    parser.add_argument("folders", type=Path, nargs="*", metavar="folder",
                        help="folders with results.csv (results/reference, and results/reference/transfer for the "
                             "transfer column)")
    parser.add_argument("--sweep", default=SWEEP)
    parser.add_argument("--readme", action="store_true",
                        help="the README's findings, from README_SOURCES, as they go between its markers")
    parser.add_argument("--write", action="store_true", help="with --readme: write them into README.md")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[2]
    try:
        if args.readme:
            findings = readme_findings(root, args.sweep)
            if args.write:
                readme = root / "README.md"
                readme.write_text(with_findings(readme.read_text(), findings))
            else:
                print(findings)
            return 0
        if not args.folders:
            parser.error("give the folders, or --readme")
        table, inputs = load_sources(args.folders)
        multipliers = multipliers_of(table, args.sweep)
        print(headline_table(table, inputs, args.sweep, multipliers))
        print(f"\nKnown answers: {baseline_line(table, args.sweep, multipliers)}")
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
