"""How an effect moves with model size: the per-seed paired difference from the baseline at each quality-model
width, regressed on log10(parameters).

The slope is the trend a reader extrapolates from ("the gap shrinks by x nats per 10x parameters"); its
interval says whether the widths measured can tell a trend from a constant effect. Ordinary least squares over
every (width, seed) difference (``scipy.stats.linregress``), a t interval on n - 2 degrees of freedom. The seeds
of one width share their baseline, so the points are not fully independent; with 3 widths the interval is wide,
and the report says so rather than drawing a line through three means.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ablations.quality.inference import ALPHA
from ablations.results.table import baseline_variant

COLUMNS = ["sweep", "variant", "widths", "n", "effect_smallest", "effect_largest", "slope_per_decade", "slope_lo",
           "slope_hi", "p", "params_smallest", "params_largest"]


def paired_differences(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (sweep, variant, d_model, seed): the variant's final validation loss minus its baseline's (the
    block its rows name, ``stats.baseline_variant``) at the same width and seed, with the variant's parameters."""
    final = table[(table["metric"] == "val_loss") & (table["mode"] == "final") & (table["status"] == "ok")]
    final = final.assign(value=pd.to_numeric(final["value"], errors="coerce"),
                         params=pd.to_numeric(final["params"], errors="coerce")).dropna(subset=["value", "d_model"])
    keys = ["sweep", "d_model", "seed"]
    pairs = []
    for sweep, s in final.groupby("sweep", sort=False):
        baseline = baseline_variant(str(sweep), s)
        base = s[s["variant"] == baseline][[*keys, "value"]].rename(columns={"value": "baseline_value"})
        pairs.append(s[s["variant"] != baseline].drop(columns="baseline", errors="ignore").merge(base, on=keys))
    if not pairs:
        return pd.DataFrame(columns=["sweep", "variant", "d_model", "seed", "params", "diff"])
    joined = pd.concat(pairs, ignore_index=True)
    return joined.assign(diff=joined["value"] - joined["baseline_value"])[["sweep", "variant", "d_model", "seed",
                                                                          "params", "diff"]]


def effect_trend(table: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per sweep and variant trained at two or more widths: its effect at the smallest and largest width (mean
    paired difference) and the slope of the effect per decade of parameters with its ``1 - alpha`` interval."""
    out = []
    for (sweep, variant), g in paired_differences(table).groupby(["sweep", "variant"], sort=False):
        if g["d_model"].nunique() < 2:
            continue
        by_width = g.groupby("d_model").agg(params=("params", "median"), diff=("diff", "mean")).sort_index()
        row = {"sweep": sweep, "variant": variant, "widths": ", ".join(str(int(w)) for w in by_width.index),
               "n": len(g), "effect_smallest": by_width["diff"].iloc[0], "effect_largest": by_width["diff"].iloc[-1],
               "params_smallest": by_width["params"].iloc[0], "params_largest": by_width["params"].iloc[-1],
               "slope_per_decade": math.nan, "slope_lo": math.nan, "slope_hi": math.nan, "p": math.nan}
        if len(g) > 2:
            fit = stats.linregress(np.log10(g["params"].to_numpy(float)), g["diff"].to_numpy(float))
            half = stats.t.ppf(1 - alpha / 2, len(g) - 2) * fit.stderr
            row.update(slope_per_decade=fit.slope, slope_lo=fit.slope - half, slope_hi=fit.slope + half,
                       p=fit.pvalue)
        out.append(row)
    return pd.DataFrame(out, columns=COLUMNS)
