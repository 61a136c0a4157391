"""REPORT.md from a sweep folder's table: the sections in order, rendered as Markdown.

``build_report(folder)`` runs at the end of every sweep (``ablations.sweep.end.finish``) and on demand
(``python -m ablations.report``). The report opens with the verdict block (``ablations.report.verdicts``), then
holds the setup, the claims table, per sweep the variants against the baseline (speed, then size and work, then
quality when training ran), the figures, and the full-size models of ``ablations.report.sizes``. Nothing in it is
typed in except the published reference figures in ``ablations.report.claims``; a figure whose data is absent is
skipped with a line saying so.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ablations.measure.ceilings import MEASUREMENTS
from ablations.quality.worth import worth as worth_of
from ablations.report.answer_tables import answer_tables
from ablations.report.buys import buys_section
from ablations.report.comparison import comparison
from ablations.report.figure_captions import remove_stale
from ablations.report.flips import flip_labels
from ablations.report.formatting import UNDER_MEASURED, markdown_table, wrap_prose
from ablations.report.known_answers import trust_lines
from ablations.report.lr_sections import scan_table, tuned_against_shared
from ablations.report.quality_sections import (
    extrapolation_table,
    holm_sentence,
    lr_check_table,
    quality_setup,
    summarize_quality,
    trend_table,
    val_loss_table,
)
from ablations.report.roofline import calibration, roofline_section, validation_section
from ablations.report.step_efficiency import step_section
from ablations.report.summary_json import summary_of, write_summary
from ablations.report.tables import SETUP_COLUMNS, ReportError, baseline_name, combine, load_table, split
from ablations.report.timing_sections import shapes_table, speed_table, variants_table, work_table
from ablations.report.verdicts import answers, verdict_block
from ablations.results.durable import write_atomic
from ablations.results.report_inputs import ReportInputs, missing, read_report_inputs
from blockbench import choices
from components import LLAMA2_TIES_EMBEDDINGS, ModelConfig, embeddings_text

REPORT = "REPORT.md"
# A smoke run's report says what it is in its first line, and gives no readings.
SMOKE_LINE = "smoke profile: it checks the plumbing and gives no verdicts"
SMOKE_NOTE = ("**A smoke run (`profile=smoke`) checks that every stage runs: its models are tiny, its rounds and "
              "seeds too few, and its numbers not for quoting. Every reading and verdict word below is withheld.**")
WITHHELD = "withheld (smoke profile)"


def is_smoke(table: pd.DataFrame) -> bool:
    """Every row of the table was measured at the smoke profile."""
    profiles = set(table["profile"].dropna().astype(str)) if "profile" in table else set()
    return profiles == {"smoke"}


def claims_section(claims_frame: pd.DataFrame, smoke: bool) -> list[str]:
    """The claims this run measured, one row each; those it did not, named in one line."""
    from ablations.report.readings import NOT_MEASURED

    unmeasured = claims_frame["measured in this run"].astype(str).str.startswith(NOT_MEASURED)
    shown = claims_frame[~unmeasured].copy()
    if smoke:
        shown["reading"] = WITHHELD
    lines = ["## Claims", ""]
    if not shown.empty:
        lines += [markdown_table(shown.reset_index(drop=True)), "",
                  "Measured = this run's table; published = the paper's own figure (not measured here).", ""]
    if unmeasured.any():
        unmeasured_claims = claims_frame.loc[unmeasured, "claim"]
        lines += ["Not measured in this run: " + "; ".join(f"\"{claim}\"" for claim in unmeasured_claims) + ".", ""]
    return lines
FIGURES = "figures"


def setup_section(table: pd.DataFrame, sources: list[Path]) -> list[str]:
    lines = ["### Setup", ""]
    rows = [("sources", ", ".join(f"`{p}`" for p in sources)),
            ("sweeps", ", ".join(f"`{s}`" for s in table["sweep"].dropna().unique())),
            ("rows", f"{len(table):,}")]
    for column in SETUP_COLUMNS:
        values = [str(v) for v in table[column].dropna().unique()]
        if values:
            rows.append((column, ", ".join(f"`{v}`" for v in values)))
    times = table["time"].dropna().sort_values()
    if not times.empty:
        rows.append(("measured", f"{times.iloc[0]} to {times.iloc[-1]}"))
    lines.append(markdown_table(pd.DataFrame(rows, columns=["setting", "value"])))
    return lines + [""]


def quality_section(q: pd.DataFrame, summary: pd.DataFrame | None, note: str) -> list[str]:
    """One sweep's training runs: what was trained, then validation loss mean ± 95% CI, each comparison's
verdict under Holm-Bonferroni and the effect it could have detected."""
    if q.empty:
        return ["No quality rows (training runs) in this sweep.", ""]
    lines = [quality_setup(q), ""]
    if summary is None:
        return lines + [note, ""]
    s = summary[summary["sweep"] == q["sweep"].iloc[0]]
    if (s["metric"] == "val_loss").any():
        lines += ["Validation loss over seeds, from `ablations.quality.stats.summarize`: each variant's mean with its "
                  "95% Student-t interval, and its difference to each reference, paired by seed (paired t-test).",
                  "", holm_sentence(s), "", markdown_table(val_loss_table(s, q)), ""]
    lr_check = lr_check_table(q)
    if lr_check is not None:
        lines += ["Learning-rate check (`train.lr_check`): the final validation loss of one seed at half, once and "
                  "twice each arm's own rate (`lr_source` in the rows says where that rate came from). ‡ marks a "
                  "variant whose best rate is another: its comparison at its own rate may understate it.", "",
                  markdown_table(lr_check), ""]
    scanned = scan_table(q)
    if scanned is not None:
        lines += ["Learning-rate scan (`train.lr_scan`, `ablations.quality.lr_scan`): each arm's mean final loss over "
                  "its scan seeds at every rate tried, the rate chosen in bold. Each arm's evaluation seeds (the "
                  "verdicts above) trained there, on seeds the scan never saw; their mean beside it says whether the "
                  "scan's choice held on them. Warm-up and schedule are shared.", "",
                  markdown_table(scanned), ""]
    trend = trend_table(q)
    if trend is not None:
        lines += ["Effect against size: the per-seed difference from the baseline trained at the same width, regressed "
                  "on log10(parameters) over every (width, seed) pair (`ablations.quality.scaling`). With few widths "
                  "the slope interval is wide; a trend counts only when it excludes 0.", "",
                  markdown_table(trend), ""]
    extrap = extrapolation_table(s)
    if extrap is not None:
        lines += ["Loss at each evaluation length (mean [95% CI] over seeds; `cannot`: no position vectors "
                  "that far):", "", markdown_table(extrap), ""]
    return lines


def tuned_section(summary: pd.DataFrame | None, worth: pd.DataFrame, smoke: bool,
                  labels: dict[str, str] | None = None) -> list[str]:
    """Each choice at one shared rate (the ``all`` sweep) beside each arm at its own (``lr_scan``), where both ran."""
    frame = tuned_against_shared(summary, worth, labels)
    if frame is None or smoke:
        return []
    changed = int(frame["verdict changes"].str.startswith("yes").sum())
    return ["## Each arm at its own learning rate", "",
            f"The same comparisons at one shared rate (sweep `all`, `train.lr`) and with each arm at its own best "
            f"rate (sweep `lr_scan`: scanned on seeds it then never judged; the rates in its section below). The "
            f"verdict changes for {changed} of {len(frame)} choices.", "", markdown_table(frame), ""]


def failures_section(bad: pd.DataFrame) -> list[str]:
    if bad.empty:
        return []
    lines = ["## Failed or diverged points", ""]
    cols = ["sweep", "variant", "seed", "status", "error"]
    seen = bad[cols].drop_duplicates()
    for r in seen.itertuples(index=False):
        lines.append(f"- `{r.sweep}` / `{r.variant}` (seed {r.seed}): {r.status}"
                     + (f": {r.error}" if isinstance(r.error, str) else ""))
    return lines + ["", "These points are left out of the tables and figures above.", ""]


# What each baseline block is, for the sentence that opens a sweep's section.
BASELINE_WHAT = {"gpt2": "GPT-2's block: every choice at GPT-2's value",
                 "llama2": "Llama-2's block: every choice Llama-2 moved at its value, GQA at the size's KV heads, "
                           + embeddings_text(LLAMA2_TIES_EMBEDDINGS)}


def sweep_section(sweep: str, s: pd.DataFrame, cmp: pd.DataFrame, q: pd.DataFrame,
                  summary: tuple[pd.DataFrame | None, str], figures: list[str]) -> list[str]:
    gpt2 = ", ".join(f"{choice.group}={choice.gpt2}" for choice in choices())
    paired = baseline_name(s if not s.empty else q)
    tied = embeddings_text(ModelConfig.tie_embeddings)
    lines = [f"## Sweep `{sweep}`", "", f"What each variant is (GPT-2's values: {gpt2}, {tied}):", "",
             variants_table(s if not s.empty else q), "",
             f"Baseline: every point here is paired with `{paired}` ({BASELINE_WHAT.get(paired, paired)}), at the "
             "same sizes and seeds: its ratios and loss differences are against that block.", ""]
    if sweep == "ladder":
        lines += ["The last rung (`llama2`) drops the linear biases and unties the embeddings: the one rung that "
                  "changes two things, because Llama-2 does both. `llama2-bias-tied` below it is the Llama-2 block "
                  "with GPT-2's biases and tied embeddings.", ""]
    if not cmp.empty:
        lines += ["### Speed, paired with the baseline in the same process", "",
                  f"Ratio = variant time / `{paired}` time (below 1 is faster): the median over paired rounds "
                  "with its distribution-free 95% interval, at the largest measured shape (batch x sequence); decode "
                  "at the longest context. ±95% is that interval's half-width relative to the median, with the "
                  "rounds it took (‡: its round budget ran out before the profile's target_halfwidth); the rounds' "
                  "p25–p75 is their spread, not an interval, and is never written in brackets (a table written "
                  "before the interval rows shows it as \"(p25–p75 a–b)\").", "",
                  speed_table(cmp), "", "### Size and work", "", work_table(cmp), "",
                  "⚠ marks a parameter count that differs from the baseline's; read its ratios with that in mind.",
                  ""]
        grid = shapes_table(s)
        if grid:
            lines += ["### Latency ratio at every shape", "", grid, ""]
        lines += roofline_section(s)
    lines += ["### Quality", ""] + quality_section(q, *summary) + step_section(q, s)
    lines += ["### Figures", ""] + figures + [""]
    return lines


HOW_TO_READ = [
    "### How to read this",
    "",
    "- `llama2` is Llama-2's block: RoPE, RMSNorm, SwiGLU, GQA and no linear biases, with "
    f"{embeddings_text(LLAMA2_TIES_EMBEDDINGS)} in the quality model.",
    "- Every timing is paired: the variant and its sweep's baseline (the GPT-2 block, or Llama-2's in a sweep run "
    "with `baseline=llama2`) alternate (ABBA) in one process, and the ratio is taken per round. The baseline's own "
    "row is it timed against itself: its spread is the noise floor.",
    "- Brackets are always a 95% interval: a ratio's (the median's, from order statistics of its rounds), a loss "
    "difference's (at its Holm level), a multiplier's (over seeds). A spread, where one is shown, is labelled as one "
    "(\"p25–p75\"). Faster, slower, better and worse are said only when the interval excludes 1 (or 0) and clears "
    "the baseline's own A/A interval. Absolute times and tokens/s are secondary: they move with machine load, the "
    "ratios much less.",
    "- FLOPs count matrix products only (a multiply-add is 2; causal attention counts the full score matrix); "
    f"utilisation is achieved FLOP/s over the run's matmul peak (measured once per run, the best of "
    f"{MEASUREMENTS}); a utilisation above 100% is marked \"{UNDER_MEASURED}\": the ceiling was measured low.",
    "",
]


def build_report(folder: Path, table: pd.DataFrame | None = None, sources: list[Path] | None = None,
                 draw_figures: bool = True, inputs: ReportInputs | None = None) -> Path:
    """Write ``folder/REPORT.md`` and ``folder/figures/`` from ``folder/results.csv`` (or ``table``) and the inputs
    recorded beside it (``inputs``, else the first of ``sources`` that holds ``report_inputs.json``); without
    ``draw_figures`` (a sweep's ``figures=false``) the report says where its figures would be and ``figures/`` keeps
    no stale ones."""
    # Imported here: the meta-device models (and matplotlib, when drawing) cost seconds that loading a table does not.
    from ablations.report import claims
    from ablations.report.sizes import sizes_markdown, sizes_table

    folder = Path(folder)
    table = load_table(folder) if table is None else combine([table])
    sources = sources or [folder]
    inputs = inputs or read_report_inputs(sources)
    if inputs is None:
        raise ReportError(missing(sources))
    measured, quality, bad = split(table)
    cmp = comparison(measured)
    summary = summarize_quality(table) if not quality.empty else (None, "")
    worth = worth_of(table, summary[0]) if not quality.empty else pd.DataFrame()
    sizes = sizes_table()
    sweeps = list(dict.fromkeys(table.loc[table["status"].fillna("ok") == "ok", "sweep"].dropna()))
    if draw_figures:
        from ablations.report import figures

        drawn = figures.draw_all(folder / FIGURES, sweeps, measured, quality, cmp, summary[0], worth,
                                 calibration(inputs))
    else:
        remove_stale(folder / FIGURES)
        undrawn = [f"*Not drawn in this build (figures=false, --no-figures): `blockbench report {folder}` draws them.*"]
        drawn = dict.fromkeys(sweeps, undrawn)

    smoke = is_smoke(table)
    title = f"# blockbench report: {', '.join(sweeps) or 'no successful points'}"
    lines = [title + (f" ({SMOKE_LINE})" if smoke else ""), ""]
    found = answers(table, cmp, summary[0], worth)
    # The top tier: the verdicts, one table per question, each arm at its own rate against one shared rate.
    lines += verdict_block(found, inputs.no_worse_margin, smoke)
    if smoke:
        lines += [SMOKE_NOTE, ""]
    lines += trust_lines(worth)
    buys, frame = buys_section(table, cmp, summary[0], worth, inputs, withhold=smoke)
    lines += answer_tables(found, frame)
    lines += tuned_section(summary[0], worth, smoke, flip_labels(table))
    # Then every sweep in detail; then how it was measured.
    lines += ["## Details", "", "Every sweep's readings (the tables above draw from them): what each choice buys in "
              "each sweep, then each sweep's speed, size, work, quality and figures.", ""]
    lines += buys
    for sweep in sweeps:
        sweep_cmp = cmp[cmp["sweep"] == sweep] if not cmp.empty else cmp
        lines += sweep_section(sweep, measured[measured["sweep"] == sweep], sweep_cmp,
                               quality[quality["sweep"] == sweep], summary, drawn.get(sweep, []))
    if not measured.empty:
        lines += ["## Performance model against measurement", ""] + validation_section(measured, inputs)[0]
    lines += failures_section(bad)
    lines += ["## Appendix: method and setup", ""] + HOW_TO_READ + setup_section(table, sources)
    lines += claims_section(claims.claims_table(table, cmp, summary[0], sizes, worth), smoke)
    # Not this run's measurement: the published models' sizes, after everything the run measured.
    lines += ["## Full-size models, computed on the meta device", "", sizes_markdown(sizes), ""]
    path = folder / REPORT
    text = "\n".join(wrap_prose(lines)).rstrip() + "\n"
    write_atomic(path, lambda f: f.write(text.encode()))
    write_summary(folder, summary_of(found, sweeps, smoke))
    return path
