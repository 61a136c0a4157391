"""A results table to what each variant buys in compute: the multiplier per comparison, its known answers, and time
to loss (``ablations.quality.multiplier`` has the method and its rules).

One row per (sweep, corpus, quality width, steps, variant) whose baseline has a budget curve: the multiplier in steps
and in training FLOPs, the seeds it read and how many were past the curve's range, and time to loss where the point
timed the quality model's training step (``ablations.measure.quality_step``). Then per curve its known answers, each
with the multiple it must read (``expected``), what it checks (``checks``) and whether its interval holds it
(``calibrated``: True or False, NaN where one seed gives no interval to judge it by):

- each interior knot left out (``multiplier.left_out``): each seed's loss at that budget read on its own curve
  without it, the fit made to interpolate as it does for a variant (its interval: the seeds' with the fit's error
  at the other interior knots);
- each between-knot budget (``train.check_budgets``): the baseline trained as a full schedule at a budget no knot
  has, read on its own seed's curve exactly as a variant is, the fit's error in its interval as in a variant's.

Beside a verdict, k is also given at its loss difference's Holm level (``k_flops_holm_*``, ``holm_level``; ``worth``
with the final-loss ``summary``): a 95% interval next to a Holm-level one would read as a verdict the loss test did not
give. The known answers keep 95%: they check the interval's method, not a family's claims.

A cyclic read of each seed's knot on the next seed's curve (this table's earlier calibration) cannot fail at a knot:
over the cycle the seeds' differences cancel. It is not a known answer here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablations.quality.multiplier import (
    Curve,
    Multiplier,
    TimeToLoss,
    combine,
    interior_knots,
    interpolation_error,
    invert,
    left_out,
    multiplier,
    span_of,
    time_to_loss,
)
from ablations.results.table import baseline_variant

# What a known-answer row checks, by kind: its ``checks`` column.
LEFT_OUT = "knot left out"
BETWEEN = "trained between knots"
NO_READING = Multiplier(math.nan, math.nan, math.nan, 0)
KEYS = ["sweep", "corpus", "d_model", "train_steps"]
COLUMNS = [*KEYS, "variant", "baseline", "expected", "checks", "n", "censored", "k_steps", "k_steps_lo",
           "k_steps_hi", "k_flops", "k_flops_lo", "k_flops_hi", "bound", "open_lo", "open_hi", "flops_ratio",
           "step_ratio", "step_ratio_lo", "step_ratio_hi", "ttl", "ttl_lo", "ttl_hi", "fit_error", "calibrated",
           "k_steps_text", "k_flops_text", "ttl_text", "holm_level", "k_flops_holm_lo", "k_flops_holm_hi",
           "k_flops_holm_text", "k_steps_holm_text", "bytes_per_param", "drop_per_doubling"]


def known_answers(worth: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``worth`` that are known answers (``expected`` set), not comparisons."""
    return worth[worth["expected"].notna()] if not worth.empty else worth


HOLDS, MISSES, UNJUDGED = "holds", "misses", "no interval"


def known_verdict(calibrated: object) -> str:
    """A known answer's ``calibrated`` in words: it holds its multiple, misses it, or (one seed) cannot be judged."""
    if calibrated is True or calibrated == 1:
        return HOLDS
    return UNJUDGED if pd.isna(calibrated) else MISSES


def untrusted(worth: pd.DataFrame) -> pd.DataFrame:
    """The known answers that do not hold their multiple (missed, or without an interval to hold it): where there
    is one, the multipliers are not trusted."""
    known = known_answers(worth)
    return known[known["calibrated"].map(known_verdict) != HOLDS] if not known.empty else known


def _finals(rows: pd.DataFrame) -> dict[int, float]:
    values = pd.to_numeric(rows["value"], errors="coerce")
    ok = (rows["status"] == "ok") & np.isfinite(values)
    return {int(s): float(v) for s, v in zip(rows.loc[ok, "seed"], values[ok], strict=True)}


def _group_keys(quality: pd.DataFrame) -> pd.DataFrame:
    quality = quality.copy()
    quality["corpus"] = quality["corpus"].fillna("") if "corpus" in quality else ""
    for key in ("d_model", "train_steps"):  # -1: none (a table without the column), as groupby drops NaN keys
        values = quality[key] if key in quality else pd.Series(np.nan, index=quality.index)
        quality[key] = pd.to_numeric(values, errors="coerce").fillna(-1).astype(int)
    return quality


def curves_of(base_final: pd.DataFrame, budgets: pd.DataFrame) -> dict[int, Curve]:
    """Per seed of the baseline: its final loss (budget 1) and its loss at every budget it was trained at."""
    points: dict[int, dict[float, float]] = {s: {1.0: v} for s, v in _finals(base_final).items()}
    for budget, g in budgets.groupby("budget"):
        for s, v in _finals(g).items():
            if s in points:
                points[s][float(budget)] = v
    full = max((len(p) for p in points.values()), default=0)
    # A seed with a budget missing (failed, or not trained) would bend its own curve: left out.
    return {s: Curve.of(p) for s, p in points.items() if len(p) == full and full >= 2}


def _step_ratio(table: pd.DataFrame, point: str | None) -> tuple[float, float, float]:
    if point is None or "point" not in table:
        return math.nan, math.nan, math.nan
    rows = table[(table["point"] == point) & (table["mode"] == "quality_step")]
    med = rows[rows["metric"] == "quality_step_latency_ratio"]
    iv = rows[rows["metric"] == "quality_step_ratio_interval"]
    ratio = float(med["value"].iloc[0]) if len(med) else math.nan
    if len(iv):
        return ratio, float(iv["lo"].iloc[0]), float(iv["hi"].iloc[0])
    return ratio, math.nan, math.nan


def training_bytes_per_param(base_final: pd.DataFrame) -> float:
    """The baseline's training bytes (steps x batch x context, a byte a token) over its parameters, from its
    final-loss rows (median over seeds): how far the model has trained."""
    numbers = {column: pd.to_numeric(base_final[column], errors="coerce")
               for column in ("step", "batch", "seq_len", "params")}
    return float((numbers["step"] * numbers["batch"] * numbers["seq_len"] / numbers["params"]).median())


def regime(base_final: pd.DataFrame, curves: dict[int, Curve]) -> dict[str, float]:
    """How far the baseline has trained: its training bytes (tokens) per parameter, and its loss drop from the run's
    steps to twice them (mean over the curve's seeds; NaN without a 2x knot): what a multiplier is read in."""
    bpp = training_bytes_per_param(base_final)
    drops = [dict(zip(curve.budgets, curve.fitted(), strict=True)) for curve in curves.values()]
    drop = float(np.mean([d[1.0] - d[2.0] for d in drops])) if all(1.0 in d and 2.0 in d for d in drops) else math.nan
    return {"bytes_per_param": bpp, "drop_per_doubling": drop}


def holm_levels(summary: pd.DataFrame | None) -> dict[tuple, float]:
    """Each final-loss comparison's confidence level, ``1 - alpha_adjusted`` (``ablations.quality.stats``), by
    (sweep, corpus, quality width, steps, variant) as ``worth`` groups them."""
    if summary is None or summary.empty or "alpha_adjusted" not in summary:
        return {}
    s = _group_keys(summary[(summary["metric"] == "val_loss") & summary["alpha_adjusted"].notna()])
    return {(*key, str(variant)): 1 - float(alpha) for *key, variant, alpha
            in s[[*KEYS, "variant", "alpha_adjusted"]].itertuples(index=False, name=None)}


def _row(key: tuple, variant: str, base: str, k: Multiplier, flops_ratio: float, expected: float,
         step: tuple[float, float, float], fit_error: float, where: dict[str, float], checks: str = "",
         holm: tuple[float, Multiplier] = (math.nan, NO_READING)) -> dict:
    sweep, corpus, width, steps = key
    kf = k.scaled(flops_ratio) if not math.isnan(flops_ratio) else NO_READING
    level, k_holm = holm
    kh = k_holm.scaled(flops_ratio) if not math.isnan(flops_ratio) else NO_READING
    ttl = time_to_loss(k, *step) if not math.isnan(step[0]) else TimeToLoss(math.nan, math.nan, math.nan)
    return {"sweep": sweep, "corpus": corpus, "d_model": width if width >= 0 else np.nan,
            "train_steps": steps if steps >= 0 else np.nan, "variant": variant, "baseline": base,
            "expected": expected, "checks": checks, "n": k.n, "censored": k.censored, "k_steps": k.estimate,
            "k_steps_lo": k.lo, "k_steps_hi": k.hi, "k_flops": kf.estimate, "k_flops_lo": kf.lo, "k_flops_hi": kf.hi,
            "bound": k.bound, "open_lo": k.open_lo, "open_hi": k.open_hi, "flops_ratio": flops_ratio,
            "step_ratio": step[0], "step_ratio_lo": step[1], "step_ratio_hi": step[2], "ttl": ttl.estimate,
            "ttl_lo": ttl.lo, "ttl_hi": ttl.hi, "fit_error": fit_error,
            "calibrated": k.contains(expected) if not math.isnan(expected) and k.judged() else np.nan,
            "k_steps_text": k.text(), "k_flops_text": kf.text(), "ttl_text": ttl.text(), "holm_level": level,
            "k_flops_holm_lo": kh.lo, "k_flops_holm_hi": kh.hi, "k_flops_holm_text": kh.text() if kh.n else "",
            "k_steps_holm_text": k_holm.text() if k_holm.n else "", **where}


def k_beside_verdict(row: pd.Series, unit: str = "flops") -> str:
    """k in ``unit`` (flops or steps) as a loss verdict's neighbour: at that verdict's Holm level where ``worth`` had
    the summary, else its 95% interval."""
    holm = row.get(f"k_{unit}_holm_text")
    return str(holm) if isinstance(holm, str) and holm else str(row[f"k_{unit}_text"])


def _curve_groups(table: pd.DataFrame):
    """Per (sweep, corpus, quality width, steps) whose baseline has a budget curve: the key, the baseline's name, its
    curves by seed, the final-loss rows and the baseline's between-knot losses (``check_loss``)."""
    if "budget" not in table or not (table["metric"] == "budget_loss").any():
        return
    quality = _group_keys(table[(table["metric"].isin(["val_loss", "budget_loss", "check_loss"]))
                                & table["mode"].isin(["final", "budget"])])
    for key, g in quality.groupby(KEYS, sort=False):
        final = g[g["metric"] == "val_loss"]
        base = baseline_variant(str(key[0]), final)
        curves = curves_of(final[final["variant"] == base], g[(g["metric"] == "budget_loss") & (g["variant"] == base)])
        if curves:
            yield key, base, curves, final, g[(g["metric"] == "check_loss") & (g["variant"] == base)]


def worth(table: pd.DataFrame, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """The multipliers of every comparison in ``table`` whose baseline has a budget curve, with its known answers;
    given the final-loss ``summary`` (``stats.summarize_quality``), each comparison's k also at its Holm level."""
    levels = holm_levels(summary)
    out: list[dict] = []
    for key, base, curves, final, checks in _curve_groups(table):
        base_flops = pd.to_numeric(final.loc[final["variant"] == base, "train_flops_step"], errors="coerce").median() \
            if "train_flops_step" in final else math.nan
        base_point = final.loc[final["variant"] == base, "point"]
        aa_step = _step_ratio(table, base_point.iloc[0] if len(base_point) else None)
        error = interpolation_error(curves)
        where = regime(final[final["variant"] == base], curves)
        for variant, v in final[final["variant"] != base].groupby("variant", sort=False):
            flops = pd.to_numeric(v["train_flops_step"], errors="coerce").median() if "train_flops_step" in v \
                else math.nan
            point = v["point"].iloc[0] if "point" in v and len(v) else None
            level = levels.get((*key, str(variant)), math.nan)
            holm = (level, multiplier(curves, _finals(v), level, fit_error=error)) if not math.isnan(level) \
                else (math.nan, NO_READING)
            out.append(_row(key, str(variant), base, multiplier(curves, _finals(v), fit_error=error),
                            base_flops / flops, math.nan, _step_ratio(table, point), error, where, holm=holm))
        # The baseline's own rows: the same model, so its clock is the baseline timed against itself.
        for budget in interior_knots(curves):
            out.append(_row(key, f"baseline at {budget:.3g}× ({LEFT_OUT})", base, left_out(curves, budget), 1.0,
                            budget, aa_step, error, where, LEFT_OUT))
        for budget, g in checks.groupby("budget"):
            losses = _finals(g)
            readings = [invert(curves[s], losses[s]) for s in sorted(curves.keys() & losses.keys())]
            out.append(_row(key, f"baseline at {float(budget):.3g}× ({BETWEEN})", base,
                            combine(readings, span=span_of(curves), fit_error=error), 1.0, float(budget), aa_step,
                            error, where, BETWEEN))
    return pd.DataFrame(out, columns=COLUMNS)


def seed_readings(table: pd.DataFrame) -> pd.DataFrame:
    """Each variant's multiplier in steps per seed (``log2_k``, ``censored``), with the baseline's training compute
    at that width (``compute``: FLOPs per step x steps): what a trend across rungs is fitted to."""
    out = []
    for (sweep, corpus, width, steps), base, curves, final, _ in _curve_groups(table):
        b = final[final["variant"] == base]
        compute = (pd.to_numeric(b.get("train_flops_step"), errors="coerce") * pd.to_numeric(b["step"])).median()
        for variant, v in final[final["variant"] != base].groupby("variant", sort=False):
            losses = _finals(v)
            for seed in sorted(curves.keys() & losses.keys()):
                r = invert(curves[seed], losses[seed])
                out.append({"sweep": sweep, "corpus": corpus, "d_model": width, "train_steps": steps,
                            "variant": variant, "seed": seed, "log2_k": math.log2(r.value), "censored": r.censored,
                            "compute": compute})
    return pd.DataFrame(out, columns=["sweep", "corpus", "d_model", "train_steps", "variant", "seed", "log2_k",
                                      "censored", "compute"])
