"""A results table to what each variant buys in compute: the multiplier per comparison, its calibration rows, and
time to loss (``ablations.quality.multiplier`` has the method and its rules).

One row per (sweep, corpus, quality width, variant) whose baseline has a budget curve: the multiplier in steps and
in training FLOPs, the seeds it read and how many were past the curve's range, and time to loss where the point
timed the quality model's training step (``ablations.measure.quality_step``). Then per curve the two calibration
rows, ``expected`` 1 and 2, whose intervals must hold those values (``calibrated``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablations.quality.multiplier import Curve, Multiplier, TimeToLoss, invert, multiplier, shifted, time_to_loss
from ablations.results.table import baseline_variant

AA, TWICE = "baseline against itself (A/A)", "baseline at 2× the steps"
# The calibration rows and the multiple each must read.
CALIBRATION = {AA: 1.0, TWICE: 2.0}
COLUMNS = ["sweep", "corpus", "d_model", "variant", "baseline", "expected", "n", "censored", "k_steps", "k_steps_lo",
           "k_steps_hi", "k_flops", "k_flops_lo", "k_flops_hi", "bound", "open_lo", "open_hi", "flops_ratio",
           "step_ratio", "step_ratio_lo", "step_ratio_hi", "ttl", "ttl_lo", "ttl_hi", "calibrated", "k_steps_text",
           "k_flops_text", "ttl_text"]


def _finals(rows: pd.DataFrame) -> dict[int, float]:
    values = pd.to_numeric(rows["value"], errors="coerce")
    ok = (rows["status"] == "ok") & np.isfinite(values)
    return {int(s): float(v) for s, v in zip(rows.loc[ok, "seed"], values[ok], strict=True)}


def _group_keys(quality: pd.DataFrame) -> pd.DataFrame:
    quality = quality.copy()
    quality["corpus"] = quality["corpus"].fillna("") if "corpus" in quality else ""
    quality["d_model"] = pd.to_numeric(quality.get("d_model"), errors="coerce").fillna(-1).astype(int)
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


def _row(key: tuple, variant: str, base: str, k: Multiplier, flops_ratio: float, expected: float,
         step: tuple[float, float, float]) -> dict:
    sweep, corpus, width = key
    kf = k.scaled(flops_ratio) if not math.isnan(flops_ratio) else Multiplier(math.nan, math.nan, math.nan, 0)
    ttl = time_to_loss(k, *step) if not math.isnan(step[0]) else TimeToLoss(math.nan, math.nan, math.nan)
    return {"sweep": sweep, "corpus": corpus, "d_model": width if width >= 0 else np.nan, "variant": variant,
            "baseline": base, "expected": expected, "n": k.n, "censored": k.censored, "k_steps": k.estimate,
            "k_steps_lo": k.lo, "k_steps_hi": k.hi, "k_flops": kf.estimate, "k_flops_lo": kf.lo, "k_flops_hi": kf.hi,
            "bound": k.bound, "open_lo": k.open_lo, "open_hi": k.open_hi, "flops_ratio": flops_ratio,
            "step_ratio": step[0], "step_ratio_lo": step[1], "step_ratio_hi": step[2], "ttl": ttl.estimate,
            "ttl_lo": ttl.lo, "ttl_hi": ttl.hi,
            "calibrated": k.contains(expected) if not math.isnan(expected) else np.nan,
            "k_steps_text": k.text(), "k_flops_text": kf.text(), "ttl_text": ttl.text()}


def _curve_groups(table: pd.DataFrame):
    """Per (sweep, corpus, quality width) whose baseline has a budget curve: the key, the baseline's name, its curves
    by seed and the final-loss rows."""
    if "budget" not in table or not (table["metric"] == "budget_loss").any():
        return
    quality = _group_keys(table[(table["metric"].isin(["val_loss", "budget_loss"]))
                                & table["mode"].isin(["final", "budget"])])
    for key, g in quality.groupby(["sweep", "corpus", "d_model"], sort=False):
        final = g[g["metric"] == "val_loss"]
        base = baseline_variant(str(key[0]), final)
        curves = curves_of(final[final["variant"] == base], g[(g["metric"] == "budget_loss") & (g["variant"] == base)])
        if curves:
            yield key, base, curves, final


def worth(table: pd.DataFrame) -> pd.DataFrame:
    """The multipliers of every comparison in ``table`` whose baseline has a budget curve, with calibration rows."""
    out: list[dict] = []
    for key, base, curves, final in _curve_groups(table):
        base_flops = pd.to_numeric(final.loc[final["variant"] == base, "train_flops_step"], errors="coerce").median() \
            if "train_flops_step" in final else math.nan
        base_point = final.loc[final["variant"] == base, "point"]
        aa_step = _step_ratio(table, base_point.iloc[0] if len(base_point) else None)
        for variant, v in final[final["variant"] != base].groupby("variant", sort=False):
            flops = pd.to_numeric(v["train_flops_step"], errors="coerce").median() if "train_flops_step" in v \
                else math.nan
            point = v["point"].iloc[0] if "point" in v and len(v) else None
            out.append(_row(key, str(variant), base, multiplier(curves, _finals(v)), base_flops / flops, math.nan,
                            _step_ratio(table, point)))
        budgets = set().union(*(c.budgets for c in curves.values()))
        for label, expected in CALIBRATION.items():
            if expected in budgets:
                # The A/A's clock is the baseline timed against itself; the 2x run is the same model, so the same.
                out.append(_row(key, label, base, shifted(curves, expected), 1.0, expected, aa_step))
    return pd.DataFrame(out, columns=COLUMNS)


def seed_readings(table: pd.DataFrame) -> pd.DataFrame:
    """Each variant's multiplier in steps per seed (``log2_k``, ``censored``), with the baseline's training compute
    at that width (``compute``: FLOPs per step x steps): what a trend across rungs is fitted to."""
    out = []
    for (sweep, corpus, width), base, curves, final in _curve_groups(table):
        b = final[final["variant"] == base]
        compute = (pd.to_numeric(b.get("train_flops_step"), errors="coerce") * pd.to_numeric(b["step"])).median()
        for variant, v in final[final["variant"] != base].groupby("variant", sort=False):
            losses = _finals(v)
            for seed in sorted(curves.keys() & losses.keys()):
                r = invert(curves[seed], losses[seed])
                out.append({"sweep": sweep, "corpus": corpus, "d_model": width, "variant": variant, "seed": seed,
                            "log2_k": math.log2(r.value), "censored": r.censored, "compute": compute})
    return pd.DataFrame(out, columns=["sweep", "corpus", "d_model", "variant", "seed", "log2_k", "censored",
                                      "compute"])
