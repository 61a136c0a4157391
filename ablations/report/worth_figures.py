"""The two figures of what each choice buys (``ablations.quality.worth``'s table for one sweep): the multipliers with
their intervals, and the cost-quality plane. Drawn by ``ablations.report.figures`` with the report's style."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ablations.report.axes import log2_x_at, log_ratio
from ablations.report.figure_style import MARKERS, palette, place_legend

# Lines of equal time to loss on the cost-quality plane: k_steps = c x the step-time ratio.
EQUAL_TIME = (0.5, 1.0, 2.0, 4.0)


def _ends(w: pd.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimates and error-bar lengths below and above (0 where the reading is one bound)."""
    est = w[key].to_numpy(dtype=float)
    lo = np.where(np.isnan(w[f"{key}_lo"].to_numpy(dtype=float)), est, w[f"{key}_lo"].to_numpy(dtype=float))
    hi = np.where(np.isnan(w[f"{key}_hi"].to_numpy(dtype=float)), est, w[f"{key}_hi"].to_numpy(dtype=float))
    return est, est - lo, hi - est


def multipliers(w: pd.DataFrame) -> Figure | str:
    """Each comparison's compute multiplier in FLOPs with its 95% interval on a log axis, 1× marked; the known
    answers (in grey) at the bottom with the value each must hold."""
    w = w[np.isfinite(w["k_flops"].astype(float))]
    if w.empty:
        return "no multiplier could be read (no variant with a baseline curve)"
    w = pd.concat([w[w["expected"].isna()], w[w["expected"].notna()]])
    tags = (("d=", "d_model"), ("steps ", "train_steps"))
    labels = [str(r["variant"]) + "".join(f" ({tag}{int(r[col])})" for tag, col in tags
                                          if not pd.isna(r[col]) and w[col].nunique() > 1) for _, r in w.iterrows()]
    fig = Figure(figsize=(6.5, 0.45 * len(w) + 1.4), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(w))[::-1]
    est, below, above = _ends(w, "k_flops")
    calibration = w["expected"].notna().to_numpy()
    for mask, colour in ((~calibration, "C0"), (calibration, "0.5")):
        ax.errorbar(est[mask], y[mask], xerr=[below[mask], above[mask]], fmt="o", color=colour, capsize=3)
    for yi, (_, r) in zip(y, w.iterrows(), strict=True):
        if r["bound"] or r["open_hi"] or r["open_lo"]:
            ax.annotate(r["k_flops_text"], (r["k_flops"], yi), xytext=(6, 6), textcoords="offset points", fontsize=7)
        if not pd.isna(r["expected"]):
            ax.plot([r["expected"]], [yi], marker="|", color="k", markersize=12)
    ax.axvline(1.0, color="k", lw=0.8, ls="--")
    log_ratio(ax, "x")
    ax.set_yticks(y, labels)
    ax.set_xlabel("compute multiplier k (training FLOPs the baseline needs for the variant's loss, ×)")
    ax.set_title("What each choice buys in compute")
    return fig


def cost_quality(w: pd.DataFrame) -> Figure | str:
    """x: the quality model's train-step time ratio; y: the multiplier in steps; both with 95% intervals. On a
    dashed line k = c × ratio the variant reaches the baseline's loss c times sooner in wall time."""
    w = w[w["expected"].isna()]
    w = w[np.isfinite(w["k_steps"].astype(float)) & np.isfinite(w["step_ratio"].astype(float))]
    if w.empty:
        return "no variant has both a multiplier and a timed training step (profile.quality_step)"
    fig = Figure(figsize=(6.0, 4.6), layout="constrained")
    ax = fig.subplots()
    k, kb, ka = _ends(w, "k_steps")
    r, rb, ra = _ends(w, "step_ratio")
    # One colour and marker per variant, named in a legend: labels written beside points that sit together collide.
    colours = palette(list(w["variant"]))
    for i, (xi, yi, label) in enumerate(zip(r, k, w["variant"], strict=True)):
        ax.errorbar([xi], [yi], xerr=[[rb[i]], [ra[i]]], yerr=[[kb[i]], [ka[i]]], fmt=MARKERS[i % len(MARKERS)],
                    capsize=3, color=colours[label], label=str(label))
    place_legend(ax, title="variant")
    x_lo, x_hi = min(0.5, float(np.nanmin(r - rb)) * 0.8), max(2.0, float(np.nanmax(r + ra)) * 1.25)
    xs = np.geomspace(x_lo, x_hi, 50)
    for factor in EQUAL_TIME:
        ax.plot(xs, factor * xs, color="0.6", lw=0.8, ls="--")
        ax.annotate(f"{factor:g}× sooner", (xs[-1], factor * xs[-1]), fontsize=7, color="0.4", ha="right", va="bottom")
    log_ratio(ax, "x")
    log_ratio(ax, "y")
    ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel("train-step time ratio (variant / baseline, quality model, ×)")
    ax.set_ylabel("compute multiplier in steps k (×)")
    ax.set_title("Cost against quality")
    return fig


def by_horizon(w: pd.DataFrame) -> Figure | str:
    """The multiplier in FLOPs against the baseline's training bytes per parameter, one line per choice with its 95%
    intervals, 1× marked: what a choice buys as the model trains longer (``+sweep=horizon``)."""
    w = w[w["expected"].isna() & np.isfinite(w["k_flops"].astype(float))]
    if w.empty or w["train_steps"].nunique() < 2 or w["d_model"].nunique() > 1:
        return "one training length per width (+sweep=horizon trains several)"
    fig = Figure(figsize=(6.5, 4.4), layout="constrained")
    ax = fig.subplots()
    for i, (variant, g) in enumerate(w.sort_values("bytes_per_param").groupby("variant", sort=False)):
        k, below, above = _ends(g, "k_flops")
        x = g["bytes_per_param"].to_numpy(dtype=float) * 1.03 ** (i - 3)  # a small shift keeps the bars apart
        ax.errorbar(x, k, yerr=[below, above], fmt="o-", capsize=3, label=str(variant))
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    log2_x_at(ax, w["bytes_per_param"].round())
    log_ratio(ax, "y")
    ax.set_xlabel("training bytes per parameter of the baseline (log)")
    ax.set_ylabel("compute multiplier k in FLOPs (×)")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("What each choice buys as the model trains longer")
    return fig
