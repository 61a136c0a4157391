"""How far training has gone, against what a choice buys: the compute multiplier k of every cell (a width, horizon and
text a sweep trained) beside the baseline's final loss there and the cell's training bytes per parameter.

Bytes per parameter says how much text a model saw for its size; the baseline's final loss says how far its training
actually got. Where log k follows the loss more closely than it follows log bytes per parameter, the multiplier is a
property of the training's progress rather than of the data budget, and a headline read early in training reads a k
that is still moving. ``correlations`` gives, per choice, Pearson's r of log k with each, over the cells of every
sweep given (``python -m ablations.report.progress DIR...``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

CELL = ["sweep", "corpus", "d_model", "train_steps"]


def baseline_losses(table: pd.DataFrame) -> pd.DataFrame:
    """Per cell: the baseline's final validation loss, mean over its seeds."""
    f = table[(table["metric"] == "val_loss") & (table["mode"] == "final") & (table["status"].fillna("ok") == "ok")
              & (table["variant"] == table["baseline"].fillna("gpt2"))].copy()
    for col in ("value", "d_model", "train_steps", "seed"):
        f[col] = pd.to_numeric(f[col], errors="coerce")
    f = f.drop_duplicates([*CELL, "seed"])
    return f.groupby(CELL, as_index=False)["value"].mean().rename(columns={"value": "baseline_loss"})


def cells(worth: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """One row per choice and cell: k in FLOPs with its interval, bytes per parameter and the baseline's final loss.
    The known answers (the baseline against itself) are left out: they measure the method, not a choice."""
    if worth.empty:
        return pd.DataFrame()
    w = worth[worth["expected"].isna() & worth["k_flops"].notna()].copy()
    for col in ("d_model", "train_steps"):
        w[col] = pd.to_numeric(w[col], errors="coerce")
    out = w.merge(baseline_losses(table), on=CELL, how="inner")
    return out[[*CELL, "variant", "k_flops", "k_flops_lo", "k_flops_hi", "k_flops_text", "bytes_per_param",
                "baseline_loss"]].sort_values(["variant", "sweep", "corpus", "d_model", "train_steps"])


def correlations(frame: pd.DataFrame) -> pd.DataFrame:
    """Per choice: the cells, and Pearson's r of log k with the baseline's final loss and with log bytes per
    parameter (NaN with fewer than 3 cells, where r is not informative)."""
    rows = []
    for variant, g in frame.groupby("variant", sort=False):
        log_k = np.log(g["k_flops"].to_numpy(float))
        rows.append({"variant": variant, "cells": len(g),
                     "r with baseline loss": _pearson(log_k, g["baseline_loss"].to_numpy(float)),
                     "r with log bytes/param": _pearson(log_k, np.log(g["bytes_per_param"].to_numpy(float)))})
    return pd.DataFrame(rows)


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.std(x[ok]) == 0 or np.std(y[ok]) == 0:
        return math.nan
    return float(np.corrcoef(x[ok], y[ok])[0, 1])
