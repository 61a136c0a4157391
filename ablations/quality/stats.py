"""Seeds to confidence: mean, spread and a 95% Student-t interval per variant, and each variant against its
sweep's baseline, paired by seed.

Paired, not Welch: every variant of a seed trains on the same bytes in the same order and is scored on the
same validation bytes, so a seed's data luck is shared and cancels in the per-seed difference. The interval
is ``mean(d) +- t(0.975, n-1) * sd(d) / sqrt(n)`` over the seeds both have; the verdict says ``better``
(lower loss) or ``worse`` only when the interval excludes zero.

The t quantile is computed here (regularised incomplete beta by continued fraction, then bisection) so
that scipy, which is no dependency, is not needed for one number.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
import pandas as pd

# The variant each sweep compares against; any other sweep compares against the GPT-2 block.
BASELINES = {"leave_one_out": "llama2"}
DEFAULT_BASELINE = "gpt2"
# How many of the four choices are Llama-2's, from the row's columns (the ladder's rung).
LLAMA = {"pos": "rope", "norm": "rmsnorm", "ffn": "swiglu"}


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (df may be fractional)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Interval:
    """Mean with its 95% Student-t interval; ``lo``/``hi`` are NaN with fewer than two values."""

    mean: float
    std: float
    n: int
    lo: float
    hi: float


def mean_ci(values: list[float], level: float = 0.95) -> Interval:
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, 0, math.nan, math.nan)
    mean = statistics.fmean(values)
    if n == 1:
        return Interval(mean, math.nan, 1, math.nan, math.nan)
    std = statistics.stdev(values)
    half = t_quantile(0.5 + level / 2, n - 1) * std / math.sqrt(n)
    return Interval(mean, std, n, mean - half, mean + half)


def verdict(diff: Interval) -> str:
    """Lower loss is better; a difference counts only when its interval excludes zero."""
    if diff.n < 2 or math.isnan(diff.lo):
        return "too few seeds"
    if diff.hi < 0:
        return "better"
    if diff.lo > 0:
        return "worse"
    return "no detectable difference"


def paired_difference(variant: dict[int, float], baseline: dict[int, float]) -> Interval:
    """Variant minus baseline over the seeds both finished."""
    return mean_ci([variant[s] - baseline[s] for s in sorted(variant.keys() & baseline.keys())])


def _rung(row: pd.Series) -> int:
    """How many of the four choices are at Llama-2's value (0 = GPT-2 block, 4 = Llama-2 block)."""
    llama = sum(str(row[k]).startswith(v) for k, v in LLAMA.items())
    return llama + int(row["n_kv_heads"] < row["n_heads"] and row["attn"] == "gqa")


def _by_seed(rows: pd.DataFrame) -> dict[int, float]:
    values = pd.to_numeric(rows["value"], errors="coerce")
    ok = (rows["status"] == "ok") & np.isfinite(values)
    return {int(s): float(v) for s, v in zip(rows.loc[ok, "seed"], values[ok], strict=True)}


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Per sweep, variant and measured quantity (final ``val_loss``; ``extrap_loss`` per evaluation length):
    n, mean, std and 95% CI over seeds, then one row per comparison (``reference``), each a paired difference
    with its CI and a verdict:

    - the sweep's baseline variant at the same quantity (``gpt2``; ``llama2`` in ``leave_one_out``);
    - in the ``ladder``, also the rung below (one Llama-2 choice fewer);
    - for ``extrap_loss`` past the training length, also the same variant at the training length
      (``"<variant> at <L>"``): the same target bytes with less context, so ``worse`` means the longer
      context hurt.

    Diverged seeds do not count in n and are counted in ``diverged``; ``cannot`` means no value exists
    (learned positions past their table)."""
    columns = ["sweep", "variant", "metric", "seq_len", "reference", "n", "mean", "std", "ci_lo", "ci_hi",
               "diverged", "diff", "diff_lo", "diff_hi", "diff_n", "verdict", "test"]
    quality = table[((table["metric"] == "val_loss") & (table["mode"] == "final"))
                    | (table["metric"] == "extrap_loss")].copy()
    if quality.empty:
        return pd.DataFrame(columns=columns)
    quality["seq_len"] = quality["seq_len"].fillna(-1).astype(int)
    keys = ["sweep", "metric", "seq_len", "variant"]
    groups = {k: g for k, g in quality.groupby(keys, sort=False)}
    seeds = {k: _by_seed(g) for k, g in groups.items()}
    cannot = {k: bool((g["statistic"] == "cannot").all()) for k, g in groups.items()}
    rungs = {k: _rung(g.iloc[0]) for k, g in groups.items()}
    shortest = quality.groupby(["sweep", "metric"])["seq_len"].min()
    out = []
    for key, g in groups.items():
        sweep, metric, seq_len, variant = key
        own = mean_ci(list(seeds[key].values()))
        base = BASELINES.get(str(sweep), DEFAULT_BASELINE)
        references = {base: (sweep, metric, seq_len, base)}
        if sweep == "ladder":
            below = [k[3] for k in groups if k[:3] == key[:3] and rungs[k] == rungs[key] - 1]
            references.update({v: (sweep, metric, seq_len, v) for v in below[:1]})
        first = int(shortest[(sweep, metric)])
        if metric == "extrap_loss" and seq_len > first:
            references[f"{variant} at {first}"] = (sweep, metric, first, variant)
        for label, ref in references.items():
            row = {"sweep": sweep, "variant": variant, "metric": metric, "seq_len": seq_len, "reference": label,
                   "n": own.n, "mean": own.mean, "std": own.std, "ci_lo": own.lo, "ci_hi": own.hi,
                   "diverged": int((g["status"] == "diverged").sum()), "test": "paired t over seeds"}
            if cannot[key]:
                row["verdict"] = "cannot"
            elif ref == key:
                row["verdict"] = "baseline"
            elif ref not in seeds:
                row["verdict"] = "no baseline in sweep"
            elif cannot[ref]:
                row["verdict"] = "no comparison: the baseline cannot run at this length"
            else:
                d = paired_difference(seeds[key], seeds[ref])
                row.update({"diff": d.mean, "diff_lo": d.lo, "diff_hi": d.hi, "diff_n": d.n, "verdict": verdict(d)})
            out.append(row)
    result = pd.DataFrame(out, columns=columns)
    result["seq_len"] = result["seq_len"].where(result["seq_len"] >= 0)
    return result
