"""REPORT.md and figures from a sweep folder's long-form table (``results.csv``).

``build_report(folder)`` runs at the end of every sweep (``ablations.callbacks.finish``) and on demand::

    python -m ablations.report DIR                      # DIR/REPORT.md and DIR/figures/
    python -m ablations.report DIR1 DIR2 ... --out OUT  # several sweeps in one report (OUT/results.csv too)

The report holds the setup, the claims table, per sweep the variants against the baseline (speed, then
size and work, then quality when training ran), the figures, and the full-size models of
``ablations.sizes``. Nothing in it is typed in except the published reference figures in
``ablations.claims``; a figure whose data is absent is skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ablations.sizes import fmt_bytes, fmt_count, fmt_flops, fmt_signed, markdown_table
from ablations.store import COLUMNS, POINTS_DIR, TABLE, collect

log = logging.getLogger("ablations")

REPORT = "REPORT.md"
FIGURES = "figures"
BASELINE = "gpt2"
# Rows of the training runs (ablations.quality); everything else is a measurement of the block.
QUALITY_METRICS = ("train_loss", "val_loss", "train_bpb", "val_bpb", "train_tokens_per_s", "train_wall_time",
                   "extrap_loss", "loss_by_position", "corpus_bytes")
QUALITY_MODES = ("curve", "final", "quality", "data", "extrapolation")
# Settings that can differ between points of one sweep (an ad-hoc grid over dtype, say); when one does,
# the variant's label names it so two points never merge into one line.
CASE_COLUMNS = ("device", "dtype", "compile", "threads", "d_model", "n_layers", "n_heads", "bias", "profile")
SETUP_COLUMNS = ("device", "device_name", "dtype", "threads", "compile", "launcher", "torch", "git_rev", "corpus",
                 "malloc", "profile", "host")


class ReportError(Exception):
    """A folder or table the report cannot be built from; the message is one line for the user."""


# --- loading ------------------------------------------------------------------------------------------

def load_table(folder: Path) -> pd.DataFrame:
    """``folder/results.csv``; a killed sweep's point files when the table was never written."""
    if not folder.is_dir():
        raise ReportError(f"{folder} is not a folder")
    path = folder / TABLE
    if path.is_file():
        table = pd.read_csv(path)
    elif any((folder / POINTS_DIR).glob("*.csv")):
        table = collect(folder)
    else:
        raise ReportError(f"no results table in {folder} (expected {path}; run a sweep with hydra.sweep.dir={folder})")
    if table.empty:
        raise ReportError(f"{path} has no rows")
    return table


def combine(tables: list[pd.DataFrame]) -> pd.DataFrame:
    table = pd.concat(tables, ignore_index=True).drop_duplicates(ignore_index=True)
    for column in COLUMNS:  # an older table may lack a newer column
        if column not in table:
            table[column] = np.nan
    return table


# --- selecting ----------------------------------------------------------------------------------------

def split(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(block measurements that succeeded, quality rows, failed or diverged rows)."""
    bad = table["status"].fillna("ok") != "ok"
    quality = table["metric"].isin(QUALITY_METRICS) | table["mode"].isin(QUALITY_MODES)
    return add_case(table[~bad & ~quality]), add_case(table[quality]), table[bad]


def add_case(frame: pd.DataFrame) -> pd.DataFrame:
    """A ``case`` column: the variant, plus any setting that varies within its sweep (``rmsnorm [compile=True]``)."""
    frame = frame.copy()
    frame["case"] = frame["variant"].astype(str)
    for _, g in frame.groupby("sweep", sort=False):
        varying = [c for c in CASE_COLUMNS if g[c].nunique(dropna=False) > 1]
        if varying:
            suffix = g[varying].astype(str).apply(lambda r: ", ".join(f"{k}={v}" for k, v in r.items()), axis=1)
            frame.loc[g.index, "case"] = g["variant"].astype(str) + " [" + suffix + "]"
    frame["base_case"] = frame["case"].str.replace(r"^[^\[]*", BASELINE + " ", regex=True).str.strip()
    return frame


def pick(g: pd.DataFrame, metric: str, mode: str | None = None, batch: float | None = None,
         seq: float | None = None) -> pd.Series | None:
    """Median over duplicates of value, lo and hi for one metric at one shape; None when absent."""
    sel = g["metric"] == metric
    if mode is not None:
        sel &= g["mode"] == mode
    if batch is not None:
        sel &= g["batch"] == batch
    if seq is not None:
        sel &= g["seq_len"] == seq
    rows = g.loc[sel, ["value", "lo", "hi"]]
    if rows.empty:
        return None
    return rows.median()


def largest_shape(g: pd.DataFrame) -> tuple[float, float] | None:
    """The forward/train shape with the most tokens (ties: the longer sequence): where the math dominates."""
    rows = g[g["mode"].isin(("forward", "train")) & g["batch"].notna() & g["seq_len"].notna()]
    if rows.empty:
        return None
    shapes = rows[["batch", "seq_len"]].drop_duplicates()
    best = shapes.assign(tokens=shapes["batch"] * shapes["seq_len"]).sort_values(["tokens", "seq_len"]).iloc[-1]
    return float(best["batch"]), float(best["seq_len"])


def longest_decode(g: pd.DataFrame) -> tuple[float, float] | None:
    """(batch, context) of the decode point with the longest context, largest batch there."""
    rows = g[(g["mode"] == "decode") & g["seq_len"].notna()]
    if rows.empty:
        return None
    ctx = rows["seq_len"].max()
    return float(rows.loc[rows["seq_len"] == ctx, "batch"].max()), float(ctx)


def shape_name(shape: tuple[float, float] | None) -> str:
    return "" if shape is None else f"{int(shape[0])}x{int(shape[1])}"


# --- the comparison: one row per sweep and case, numbers only -----------------------------------------

def comparison(measured: pd.DataFrame) -> pd.DataFrame:
    """Each variant against the baseline, per sweep: the numbers every table and claim reads."""
    out = []
    for sweep, s in measured.groupby("sweep", sort=False):
        shape, decode = largest_shape(s), longest_decode(s)
        for case, g in s.groupby("case", sort=False):
            out.append(_compare_case(str(sweep), str(case), g, shape, decode))
    frame = pd.DataFrame(out)
    if frame.empty:
        return frame
    return _against_baseline(frame)


def _compare_case(sweep: str, case: str, g: pd.DataFrame, shape: tuple[float, float] | None,
                  decode: tuple[float, float] | None) -> dict:
    first = g.iloc[0]
    r = {"sweep": sweep, "case": case, "base_case": first["base_case"], "variant": first["variant"]}
    for c in ("pos", "norm", "ffn", "attn", "n_kv_heads", "n_heads", "device", "dtype", "compile", "torch"):
        r[c] = first[c]
    r["params"], r["params_baseline"] = g["params"].median(), g["params_baseline"].median()
    r["shape"] = shape_name(shape)
    b, t = shape if shape else (None, None)
    for mode, key in (("forward", "fwd"), ("train", "train")):
        _put(r, key, pick(g, "latency_ratio", mode, b, t), spread=True)
        _put(r, f"{key}_tps", pick(g, "throughput", mode, b, t))
        _put(r, f"{key}_flops", pick(g, "flops", mode, b, t))
        _put(r, f"{key}_util", pick(g, "utilisation", mode, b, t))
    _put(r, "act_bytes", pick(g, "activation_bytes", "train", b, t))
    r["decode_batch"], r["decode_ctx"] = decode if decode else (np.nan, np.nan)
    db, dc = decode if decode else (None, None)
    _put(r, "decode", pick(g, "decode_latency_ratio", "decode", db, dc), spread=True)
    _put(r, "decode_s", pick(g, "decode_latency", "decode", db, dc))
    kv = pick(g, "kv_cache_bytes", "decode", db, dc)
    r["kv_per_token"] = kv["value"] / (db * dc) if kv is not None else np.nan
    return r


def _put(r: dict, key: str, stat: pd.Series | None, spread: bool = False) -> None:
    r[key] = np.nan if stat is None else stat["value"]
    if spread:
        r[f"{key}_lo"] = np.nan if stat is None else stat["lo"]
        r[f"{key}_hi"] = np.nan if stat is None else stat["hi"]


def _against_baseline(frame: pd.DataFrame) -> pd.DataFrame:
    """Ratios to the baseline row of the same sweep and settings, where the sweep measured one."""
    frame["params_delta"] = frame["params"] - frame["params_baseline"]
    base = frame.set_index(["sweep", "case"])
    keys = list(zip(frame["sweep"], frame["base_case"], strict=True))

    def ref(col: str) -> pd.Series:
        return pd.Series([base[col].get(k, np.nan) for k in keys], index=frame.index)

    for col in ("fwd_flops", "train_flops", "act_bytes", "kv_per_token"):
        frame[f"{col}_ratio"] = frame[col] / ref(col)
    # The baseline timed against itself (A/A): its spread is the noise floor a variant's ratio must clear.
    for key in ("fwd", "train", "decode"):
        frame[f"{key}_aa_lo"], frame[f"{key}_aa_hi"] = ref(f"{key}_lo"), ref(f"{key}_hi")
    return frame


# --- formatting ---------------------------------------------------------------------------------------

def fmt_spread(v: float, lo: float, hi: float) -> str:
    """``1.18× [1.12, 1.25]``: median with its quartiles over paired rounds."""
    if pd.isna(v):
        return "—"
    if pd.isna(lo) or pd.isna(hi):
        return f"{v:.3f}×"
    return f"{v:.3f}× [{lo:.3f}, {hi:.3f}]"


def fmt_x(v: float) -> str:
    """Three decimals: a 0.5% FLOPs difference must not print as 1×."""
    return "—" if pd.isna(v) else f"{v:.3f}×"


def fmt_pct(v: float) -> str:
    return "—" if pd.isna(v) else f"{100 * v:.0f}%"


def fmt_rate(v: float) -> str:
    return "—" if pd.isna(v) else f"{v:,.0f}"


def fmt_params_delta(delta: float, base: float) -> str:
    if pd.isna(delta) or pd.isna(base) or base == 0:
        return "—"
    if delta == 0:
        return "0"
    return f"⚠ {fmt_signed(delta)} ({100 * delta / base:+.2f}%)"


# --- sections -----------------------------------------------------------------------------------------

def setup_section(table: pd.DataFrame, sources: list[Path]) -> list[str]:
    lines = ["## Setup", ""]
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


def speed_table(c: pd.DataFrame) -> str:
    shape = c["shape"].iloc[0]
    decode = "decode ×" if c["decode_ctx"].isna().all() else (
        f"decode × (B={int(c['decode_batch'].iloc[0])}, context {int(c['decode_ctx'].iloc[0]):,})")
    return markdown_table(pd.DataFrame({
        "variant": c["case"],
        f"forward × ({shape})": [fmt_spread(*v) for v in c[["fwd", "fwd_lo", "fwd_hi"]].to_numpy()],
        f"train × ({shape})": [fmt_spread(*v) for v in c[["train", "train_lo", "train_hi"]].to_numpy()],
        "forward tokens/s": c["fwd_tps"].map(fmt_rate),
        "train tokens/s": c["train_tps"].map(fmt_rate),
        decode: [fmt_spread(*v) for v in c[["decode", "decode_lo", "decode_hi"]].to_numpy()],
        "decode ms/step": c["decode_s"].map(lambda s: "—" if pd.isna(s) else f"{1e3 * s:.3g}"),
    }))


def work_table(c: pd.DataFrame) -> str:
    shape = c["shape"].iloc[0]
    return markdown_table(pd.DataFrame({
        "variant": c["case"],
        "params": c["params"].map(fmt_count),
        "Δ params vs baseline": [fmt_params_delta(d, b) for d, b in zip(c["params_delta"], c["params_baseline"],
                                                                          strict=True)],
        f"saved activations ({shape})": c["act_bytes"].map(fmt_bytes),
        "activations ×": c["act_bytes_ratio"].map(fmt_x),
        "KV bytes/token": c["kv_per_token"].map(fmt_bytes),
        "KV ×": c["kv_per_token_ratio"].map(fmt_x),
        f"forward FLOPs ({shape})": c["fwd_flops"].map(fmt_flops),
        "FLOPs ×": c["fwd_flops_ratio"].map(fmt_x),
        "utilisation fwd / train": [f"{fmt_pct(f)} / {fmt_pct(t)}" for f, t in zip(c["fwd_util"], c["train_util"],
                                                                                  strict=True)],
    }))


def shapes_table(s: pd.DataFrame) -> str | None:
    """The latency ratio at every measured shape, forward and train: a variant's scaling in one glance."""
    rows = s[(s["metric"] == "latency_ratio") & s["mode"].isin(("forward", "train"))]
    if rows.empty:
        return None
    rows = rows.assign(column=rows["mode"] + " " + rows["batch"].astype(int).astype(str) + "x"
                       + rows["seq_len"].astype(int).astype(str))
    cells = rows.groupby(["case", "column"], sort=False)[["value", "lo", "hi"]].median()
    grid = cells.apply(lambda r: fmt_spread(r["value"], r["lo"], r["hi"]), axis=1).unstack("column")
    order = sorted(grid.columns, key=lambda col: (col.split()[0] != "forward", _tokens(col)))
    grid = grid.reindex(index=list(dict.fromkeys(rows["case"])), columns=order).fillna("—")
    return markdown_table(grid.reset_index().rename(columns={"case": "variant"}))


def _tokens(column: str) -> tuple[int, int]:
    b, t = column.split()[1].split("x")
    return int(b) * int(t), int(t)


def quality_section(q: pd.DataFrame, summary: pd.DataFrame | None, note: str) -> list[str]:
    """One sweep's training runs: what was trained, then validation loss mean ± 95% CI with the verdict."""
    if q.empty:
        return ["No quality rows (training runs) in this sweep.", ""]
    lines = [quality_setup(q), ""]
    if summary is None:
        return lines + [note, ""]
    s = summary[summary["sweep"] == q["sweep"].iloc[0]]
    if (s["metric"] == "val_loss").any():
        lines += ["Validation loss over seeds, from `ablations.quality.stats.summarize` (95% Student-t intervals; "
                  "the difference is paired by seed; the verdict counts only when its interval excludes zero):", "",
                  markdown_table(val_loss_table(s, q)), ""]
    extrap = extrapolation_table(s)
    if extrap is not None:
        lines += ["Loss at each evaluation length (mean [95% CI] over seeds; `cannot`: no position vectors "
                  "that far):", "", markdown_table(extrap), ""]
    return lines


def quality_setup(q: pd.DataFrame) -> str:
    """The trained model and budget, from the rows (the quality model is smaller than the timed one)."""
    final = q[(q["metric"] == "val_loss") & (q["mode"] == "final")]
    first = (final if not final.empty else q).iloc[0]
    seeds = ", ".join(str(int(v)) for v in sorted(q["seed"].dropna().unique()))
    parts = [f"d_model {int(first['d_model'])}, {int(first['n_layers'])} layers, {int(first['n_heads'])} heads"]
    if not pd.isna(first["batch"]) and not pd.isna(first["seq_len"]):
        parts.append(f"batch {int(first['batch'])} × context {int(first['seq_len'])}")
    if final["step"].notna().any():
        parts.append(f"{int(final['step'].max())} steps")
    parts.append(f"seeds {seeds}")
    corpus = q["corpus"].dropna().unique()
    if len(corpus):
        parts.append("corpus " + ", ".join(f"`{str(c)[:12]}`" for c in corpus))
    return "Quality runs (a small model trained from scratch, not the timed block): " + "; ".join(parts) + "."


def val_loss_table(s: pd.DataFrame, q: pd.DataFrame) -> pd.DataFrame:
    v = s[s["metric"] == "val_loss"]
    unit = ", ".join(q.loc[q["metric"] == "val_loss", "unit"].dropna().unique()) or "?"
    mean_by = {m: q[q["metric"] == m].groupby("variant")["value"].mean()
               for m in ("train_tokens_per_s", "train_wall_time")}
    return pd.DataFrame({
        "variant": v["variant"],
        "vs": v.get("reference", pd.Series(BASELINE, index=v.index)),
        "seeds": v["n"].map(fmt_count),
        f"val loss ({unit}) [95% CI]": [fmt_ci(m, lo, hi) for m, lo, hi in v[["mean", "ci_lo", "ci_hi"]].to_numpy()],
        "Δ vs reference [95% CI]": [fmt_ci(d, lo, hi, signed=True) for d, lo, hi in
                                    v[["diff", "diff_lo", "diff_hi"]].to_numpy()],
        "verdict": v["verdict"].fillna("—"),
        "diverged": v.get("diverged", pd.Series(np.nan, index=v.index)).map(fmt_count),
        "train tokens/s": v["variant"].map(mean_by["train_tokens_per_s"]).map(fmt_rate),
        "wall time per seed (s)": v["variant"].map(mean_by["train_wall_time"]).map(
            lambda t: "—" if pd.isna(t) else f"{t:.3g}"),
    })


def extrapolation_table(s: pd.DataFrame) -> pd.DataFrame | None:
    e = s[(s["metric"] == "extrap_loss") & s["seq_len"].notna()]
    if e.empty:
        return None
    cell = e.apply(lambda r: "cannot" if r["verdict"] == "cannot" or pd.isna(r["mean"])
                   else fmt_ci(r["mean"], r["ci_lo"], r["ci_hi"]), axis=1)
    grid = e.assign(cell=cell, length=e["seq_len"].astype(int)).drop_duplicates(["variant", "length"])
    grid = grid.pivot(index="variant", columns="length", values="cell")
    grid = grid.reindex(index=list(dict.fromkeys(e["variant"])), columns=sorted(grid.columns)).fillna("—")
    grid.columns = [f"{c} tokens" for c in grid.columns]
    return grid.reset_index()


def fmt_ci(v: float, lo: float, hi: float, signed: bool = False) -> str:
    if pd.isna(v):
        return "—"
    f = "{:+.4f}" if signed else "{:.4f}"
    if pd.isna(lo) or pd.isna(hi):
        return f.format(v)
    return f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]"


def summarize_quality(table: pd.DataFrame) -> tuple[pd.DataFrame | None, str]:
    """``ablations.quality.stats.summarize`` of the whole table; (None, why) when absent or failing."""
    try:
        from ablations.quality.stats import summarize
    except ImportError:
        return None, ("Quality rows are present, but `ablations.quality.stats` is not importable here: "
                      "the quality summary is skipped.")
    try:
        summary = summarize(table)
    except Exception as exc:  # a broken summary must not take the rest of the report down
        log.warning("quality summary failed: %s", exc)
        return None, f"The quality summary failed ({type(exc).__name__}: {exc}); skipped."
    units = table.dropna(subset=["unit"]).groupby("metric")["unit"].first()
    return summary.assign(unit=summary["metric"].map(units)), ""


def format_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].map(lambda v: "—" if pd.isna(v) else f"{v:.4g}")
    return out


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


def sweep_section(sweep: str, s: pd.DataFrame, c: pd.DataFrame, q: pd.DataFrame,
                  summary: tuple[pd.DataFrame | None, str], figures: list[str]) -> list[str]:
    lines = [f"## Sweep `{sweep}`", ""]
    if not c.empty:
        lines += ["### Speed, paired with the baseline in the same process", "",
                  "Ratio = variant time / GPT-2 baseline time (below 1 is faster): median [p25, p75] over paired "
                  "rounds, at the largest measured shape (batch x sequence); decode at the longest context.", "",
                  speed_table(c), "", "### Size and work", "", work_table(c), "",
                  "⚠ marks a parameter count that differs from the baseline's; read its ratios with that in mind.",
                  ""]
        grid = shapes_table(s)
        if grid:
            lines += ["### Latency ratio at every shape", "", grid, ""]
    lines += ["### Quality", ""] + quality_section(q, *summary)
    lines += ["### Figures", ""] + figures + [""]
    return lines


HOW_TO_READ = [
    "## How to read this",
    "",
    "- Every timing is paired: the variant and the GPT-2 baseline alternate (ABBA) in one process, and the "
    "ratio is taken per round. The `gpt2` row is the baseline timed against itself: its spread is the noise floor.",
    "- Spreads are quartiles over rounds, not confidence intervals. Absolute times and tokens/s are secondary: "
    "they move with machine load, the ratios much less.",
    "- FLOPs count matrix products only (a multiply-add is 2; causal attention counts the full score matrix); "
    "utilisation is achieved FLOP/s over a matmul peak measured in the same run.",
    "",
]


# --- the whole report ---------------------------------------------------------------------------------

def build_report(folder: Path, table: pd.DataFrame | None = None, sources: list[Path] | None = None) -> Path:
    """Write ``folder/REPORT.md`` and ``folder/figures/`` from ``folder/results.csv`` (or ``table``)."""
    from ablations import claims, figures
    from ablations.sizes import sizes_markdown, sizes_table

    folder = Path(folder)
    table = load_table(folder) if table is None else combine([table])
    sources = sources or [folder]
    measured, quality, bad = split(table)
    cmp = comparison(measured)
    summary = summarize_quality(table) if not quality.empty else (None, "")
    sizes = sizes_table()
    sweeps = list(dict.fromkeys(table.loc[table["status"].fillna("ok") == "ok", "sweep"].dropna()))
    drawn = figures.draw_all(folder / FIGURES, sweeps, measured, quality, cmp)

    lines = [f"# blockbench report: {', '.join(sweeps) or 'no successful points'}", ""]
    lines += setup_section(table, sources)
    lines += ["## Claims", "", markdown_table(claims.claims_table(table, cmp, summary[0], sizes)), "",
              "Measured = this run's table; published = the paper's own figure (not measured here).", ""]
    for sweep in sweeps:
        c = cmp[cmp["sweep"] == sweep] if not cmp.empty else cmp
        lines += sweep_section(sweep, measured[measured["sweep"] == sweep], c, quality[quality["sweep"] == sweep],
                               summary, drawn.get(sweep, []))
    lines += ["## Full-size models, computed on the meta device", "", sizes_markdown(sizes), ""]
    lines += failures_section(bad) + HOW_TO_READ
    path = folder / REPORT
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablations.report",
        description="Build REPORT.md and figures (PNG, SVG) from one or more sweep folders' results.csv.",
    )
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="sweep folder(s) holding results.csv")
    parser.add_argument("--out", type=Path, help="write the report here (default: the first DIR); a new folder "
                        "also gets the combined results.csv, so it can be rebuilt on its own")
    args = parser.parse_args(argv)
    try:
        tables = [load_table(f) for f in args.folders]
    except ReportError as exc:
        print(f"ablations.report: error: {exc}", file=sys.stderr)
        return 2
    out = args.out or args.folders[0]
    table = combine(tables)
    out.mkdir(parents=True, exist_ok=True)
    if args.out and all(args.out.resolve() != f.resolve() for f in args.folders):
        table.to_csv(out / TABLE, index=False)
    print(build_report(out, table, sources=args.folders).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
