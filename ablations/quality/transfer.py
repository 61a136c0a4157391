"""Does a verdict carry across scale and text? The ``transfer`` sweep's reading.

The sweep trains each flip and Llama-2's block at several rungs (width and steps growing together) on two texts.
Per choice:

- **cells**: the verdict (``ablations.quality.stats``: paired t, Holm across the sweep) and the multiplier at each
  rung and text;
- **consistent**: the verdict is the same in every cell (better everywhere, or no detectable difference everywhere);
- **trend**: the multiplier's change per doubling of training compute on each text, an ordinary least-squares slope
  of each seed's log2 k on log2 compute over every rung (``scipy.stats.linregress``; its 95% t interval), left
  unfitted where a seed's multiplier was a bound (a slope through bounds would be an extrapolation).

**Sign agreement**: over every choice, text and lower rung, the fraction whose sign of the loss difference against
the baseline (the point estimate) matches the same choice's sign at the top rung on the same text.

**Decision accuracy** as DataDecide (Magnusson et al. 2025) defines it: over every pair of arms (the baseline among
them), the fraction a lower rung orders as the top rung does, by mean final loss (``decision_accuracy``). A pair
whose paired difference at the top is not distinguishable from 0 (its 95% t interval over seeds holds 0) is a
null effect, whose order is a coin flip: counted apart, and the accuracy given over the other pairs too.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

SWEEP = "transfer"
CELL_COLUMNS = ["variant", "corpus", "d_model", "diff", "diff_lo", "diff_hi", "verdict", "top"]


def cells(summary: pd.DataFrame, sweep: str = SWEEP) -> pd.DataFrame:
    """One row per variant, text and rung: its loss difference to the baseline and verdict; ``top`` marks the
    widest rung of its text."""
    s = summary[(summary["sweep"] == sweep) & (summary["metric"] == "val_loss")]
    s = s[s["reference"].isin(s["variant"].unique()) & (s["reference"] != s["variant"])]
    if s.empty:
        return pd.DataFrame(columns=CELL_COLUMNS)
    out = s[["variant", "corpus", "d_model", "diff", "diff_lo", "diff_hi", "verdict"]].copy()
    top = out.groupby("corpus")["d_model"].transform("max")
    out["top"] = out["d_model"] == top
    return out.reset_index(drop=True)


def consistency_rate(cell_table: pd.DataFrame) -> tuple[float, int]:
    """The fraction of (choice, text, lower rung) whose loss difference has the top rung's sign; and how many."""
    agree = []
    for (_, _), g in cell_table.groupby(["variant", "corpus"]):
        top = g[g["top"]]
        if top.empty or pd.isna(top["diff"].iloc[0]):
            continue
        sign = np.sign(top["diff"].iloc[0])
        agree += [np.sign(d) == sign for d in g.loc[~g["top"], "diff"] if not pd.isna(d)]
    return (float(np.mean(agree)) if agree else math.nan), len(agree)


def decision_accuracy(finals: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Per lower value of ``scale`` (a column of ``finals``: the rung's width, the horizon's steps): of every pair of
    arms, how many it orders as the largest value does, over all pairs and over the pairs not null at the top.
    ``finals``: one row per ``scale``, ``variant`` and ``seed`` with the final loss in ``value``."""
    from itertools import combinations

    from scipy import stats

    top = finals[scale].max()
    at_top = finals[finals[scale] == top].pivot_table(index="seed", columns="variant", values="value")
    null = set()
    for a, b in combinations(sorted(at_top.columns), 2):
        d = (at_top[a] - at_top[b]).dropna()
        if len(d) < 2 or float(d.std(ddof=1)) == 0:
            continue
        half = float(stats.t.ppf(0.975, len(d) - 1)) * float(d.std(ddof=1)) / math.sqrt(len(d))
        if abs(float(d.mean())) <= half:
            null.add((a, b))
    top_means = at_top.mean()
    rows = []
    for value, g in finals[finals[scale] != top].groupby(scale):
        means = g.groupby("variant")["value"].mean()
        pairs = [(a, b) for a, b in combinations(sorted(set(means.index) & set(top_means.index)), 2)]
        same = {p: np.sign(means[p[0]] - means[p[1]]) == np.sign(top_means[p[0]] - top_means[p[1]]) for p in pairs}
        real = [p for p in pairs if p not in null]
        rows.append({scale: value, "pairs": len(pairs), "ordered as at the top": sum(same.values()),
                     "decision accuracy": float(np.mean(list(same.values()))) if pairs else math.nan,
                     "null at the top": len(pairs) - len(real),
                     "accuracy without them": float(np.mean([same[p] for p in real])) if real else math.nan})
    return pd.DataFrame(rows)


def trend(readings: pd.DataFrame, variant: str, corpus: str, scale: str = "d_model") -> str:
    """The multiplier's slope per doubling of compute on one text, with its 95% interval, or why there is none.
    ``scale``: the column that tells the readings' compute apart (the rung's width; the horizon's steps)."""
    from scipy import stats

    r = readings[(readings["variant"] == variant) & (readings["corpus"] == corpus)]
    if r[scale].nunique() < 2:
        return "—"
    if (r["censored"].fillna("") != "").any():
        return "not fitted: a multiplier past the curve is a bound"
    fit = stats.linregress(np.log2(r["compute"].astype(float)), r["log2_k"].astype(float))
    half = float(stats.t.ppf(0.975, len(r) - 2)) * fit.stderr if len(r) > 2 else math.nan
    per = 2 ** fit.slope
    return f"×{per:.3g} per doubling [{2 ** (fit.slope - half):.3g}, {2 ** (fit.slope + half):.3g}]"


def per_choice(cell_table: pd.DataFrame, readings: pd.DataFrame | None = None, worth: pd.DataFrame | None = None,
               names: dict[str, str] | None = None, published: dict[str, str | None] | None = None,
               agree: Callable[[str | None, str, float], str] | None = None) -> pd.DataFrame:
    """Per variant: its verdict and multiplier in each cell (a column per text and width), whether the verdict is the
    same in all of them, how many agree with the published verdict, and its trend on each text."""
    names = names or {}
    cell_table = cell_table.sort_values(["corpus", "d_model"])
    rows = []
    for variant, g in cell_table.groupby("variant", sort=False):
        verdicts = list(g["verdict"])
        answered = all(v in ANSWERED for v in verdicts)
        row: dict[str, object] = {"variant": variant}
        for _, cell in g.iterrows():
            k = _cell_multiplier(worth, variant, cell["corpus"], cell["d_model"])
            row[f"{names.get(cell['corpus'], str(cell['corpus'])[:8])} d={int(cell['d_model'])}"] = (
                f"{_short(cell['verdict'])}{'' if k is None else f', k {k}'}")
        row["consistent"] = "yes" if answered and len(set(verdicts)) == 1 else "no"
        said = (published or {}).get(variant)
        if said and agree is not None:
            marks = [agree(said, v, hi) for v, hi in zip(verdicts, g["diff_hi"], strict=True)]
            row["published"] = f"{said}: agrees in {marks.count('agrees')} of {len(marks)}"
        else:
            row["published"] = "—"
        if readings is not None and not readings.empty:
            row["trend of k"] = "; ".join(f"{names.get(t, str(t)[:8])} {trend(readings, variant, t)}"
                                          for t in g["corpus"].unique())
        rows.append(row)
    return pd.DataFrame(rows)


def verdict_counts(cell_table: pd.DataFrame) -> pd.Series:
    """Per variant, how its verdict reads over the cells: ``consistent: no difference in 6 of 6`` where it is the same
    everywhere, ``no difference in 3 of 6, better in 3`` where it is not (most frequent first)."""
    out = {}
    for variant, g in cell_table.sort_values(["corpus", "d_model"]).groupby("variant", sort=False):
        answered = g["verdict"].isin(ANSWERED).all()
        counts = g["verdict"].map(_short).value_counts()
        parts = [f"{v} in {n} of {len(g)}" if i == 0 else f"{v} in {n}" for i, (v, n) in enumerate(counts.items())]
        out[variant] = ("consistent: " if answered and len(counts) == 1 else "") + ", ".join(parts)
    return pd.Series(out, dtype=object)


# Verdicts that answer a comparison (a seed budget spent without an answer is none of them).
ANSWERED = ("better", "worse", "no detectable difference")
# Verdicts as a cell says them.
SHORT = {"no detectable difference": "no difference"}


def _short(verdict: str) -> str:
    return SHORT.get(verdict, str(verdict))


def _cell_multiplier(worth: pd.DataFrame | None, variant: str, corpus: str, width: float) -> str | None:
    if worth is None or worth.empty:
        return None
    w = worth[(worth["variant"] == variant) & (worth["corpus"] == corpus) & (worth["d_model"] == width)]
    return str(w["k_flops_text"].iloc[0]) if len(w) else None
