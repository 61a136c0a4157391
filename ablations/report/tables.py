"""Loading, combining and selecting the long-form tables a report is built from.

A report reads one or more sweep folders' ``results.csv`` (or a killed sweep's point files), stacks them,
and splits them into block measurements, quality rows and failures; every later stage reads these frames.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ablations.results.store import COLUMNS
from ablations.results.table import TableError, load

BASELINE = "gpt2"
# Rows of the training runs (ablations.quality); everything else is a measurement of the block.
QUALITY_METRICS = ("train_loss", "val_loss", "train_bpb", "val_bpb", "train_tokens_per_s", "train_wall_time",
                   "extrap_loss", "loss_by_position", "corpus_bytes", "budget_loss", "check_loss", "budget_wall_time")
QUALITY_MODES = ("curve", "final", "quality", "data", "extrapolation", "budget", "lr_scan", "lr_check")
# Settings that can differ between points of one sweep (an ad-hoc grid over dtype, say); when one does,
# the variant's label names it so two points never merge into one line. Not the five choices (nor tied
# embeddings): the variant's name already says those, and its baseline is the GPT-2 block of the same case.
CASE_COLUMNS = ("device", "dtype", "compile", "threads", "d_model", "n_layers", "n_heads", "profile")
SETUP_COLUMNS = ("device", "device_name", "dtype", "threads", "compile", "launcher", "torch", "git_rev", "corpus",
                 "malloc", "profile", "host", "plugins")


class ReportError(Exception):
    """A folder or table the report cannot be built from; the message is one line for the user."""


def load_table(folder: Path) -> pd.DataFrame:
    """``folder/results.csv``; a killed sweep's point files when the table was never written (``table.load``)."""
    if not folder.is_dir():
        raise ReportError(f"{folder} is not a folder")
    try:
        return load(folder)
    except TableError as exc:
        raise ReportError(str(exc)) from None


def combine(tables: list[pd.DataFrame]) -> pd.DataFrame:
    table = pd.concat(tables, ignore_index=True).drop_duplicates(ignore_index=True)
    for column in COLUMNS:  # a table may lack a column
        if column not in table:
            table[column] = np.nan
    return table


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
        varying = [column for column in CASE_COLUMNS if g[column].nunique(dropna=False) > 1]
        if varying:
            suffix = g[varying].astype(str).apply(lambda r: ", ".join(f"{k}={v}" for k, v in r.items()), axis=1)
            frame.loc[g.index, "case"] = g["variant"].astype(str) + " [" + suffix + "]"
    base = baselines(frame)
    settings = frame["case"].str.extract(r"(\[.*)$", expand=False).fillna("")
    frame["base_case"] = (base + " " + settings).str.strip()
    return frame


def baselines(frame: pd.DataFrame) -> pd.Series:
    """Each row's baseline variant: the block its point was paired with (GPT-2's where a table predates it)."""
    named = frame["baseline"] if "baseline" in frame else pd.Series(np.nan, index=frame.index)
    return named.where(named.notna(), BASELINE).astype(str)


def summary_baseline(summary: pd.DataFrame) -> str:
    """The baseline variant of a quality summary (``stats.summarize``): the variant compared with itself."""
    own = summary[summary["variant"] == summary["reference"]] if "reference" in summary else summary.iloc[:0]
    return str(own["variant"].iloc[0]) if not own.empty else BASELINE


def baseline_name(frame: pd.DataFrame) -> str:
    """The baseline variant of a sweep's rows (the first named; GPT-2's in a table that predates the column)."""
    named = baselines(frame)
    return str(named.iloc[0]) if len(named) else BASELINE


def with_intervals(rows: pd.DataFrame, s: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``rows`` (paired ratios) with ``lo``/``hi`` replaced by each ratio's 95% interval (the ``metric`` rows of the
    same case, mode and shape) where the table has one, and ``interval`` saying which did; a ratio without keeps its
    rounds' quartiles, to be labelled as a spread."""
    iv = s[s["metric"] == metric]
    if iv.empty:
        return rows.assign(interval=False)
    keys = ["case", "mode", "batch", "seq_len"]
    bounds = iv.groupby(keys)[["lo", "hi"]].median()
    out = rows.join(bounds, on=keys, rsuffix="_ci")
    has = out["lo_ci"].notna()
    out.loc[has, "lo"], out.loc[has, "hi"] = out.loc[has, "lo_ci"], out.loc[has, "hi_ci"]
    return out.drop(columns=["lo_ci", "hi_ci"]).assign(interval=has)
