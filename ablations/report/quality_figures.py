"""The figures of a sweep's quality runs: training curves, loss against evaluation length and by position, and each
effect against the quality model's size. Each builder takes one sweep's rows and returns a ``Figure``, or a string
saying why there is nothing to draw."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from ablations.report.axes import log2_x_at, log_x
from ablations.report.figure_style import (
    MARKERS,
    case_order,
    new_figure,
    palette,
    place_legend,
    seeds_text,
    unit_text,
)
from ablations.report.tables import baseline_name, summary_baseline

# The share of the run whose loss sets a curve's y-axis: the arms differ late, where the first steps' fall would
# flatten them into one line.
LATE_SHARE = 0.8


def zoom_to_late_steps(ax: Axes, m: pd.DataFrame) -> None:
    """The y-axis over the last ``LATE_SHARE`` of the steps (the arms' means there, with a margin); the early fall is
    clipped and said so on the axes."""
    late = m[m["step"] >= (1 - LATE_SHARE) * m["step"].max()]
    means = late.groupby(["case", "step"])["value"].mean()
    if means.empty or m["value"].max() <= means.max():
        return
    span = float(means.max() - means.min()) or 0.1
    ax.set_ylim(float(means.min()) - 0.15 * span, float(means.max()) + 0.35 * span)
    ax.annotate(f"y-axis: the last {LATE_SHARE:.0%} of the steps (the first steps' loss is above it)",
                (0.01, 0.99), xycoords="axes fraction", ha="left", va="top", fontsize=7, color="0.35")


def training_curves(q: pd.DataFrame) -> Figure | str:
    """Train and validation loss against step, mean over seeds with a 95% bootstrap band."""
    rows = q[q["metric"].isin(("train_loss", "val_loss")) & (q["mode"] == "curve") & q["step"].notna()]
    if rows.empty:
        return "no training-curve rows (`train_loss`/`val_loss`, mode `curve`) in this sweep"
    metrics = [m for m in ("train_loss", "val_loss") if (rows["metric"] == m).any()]
    fig, axes = new_figure(len(metrics))
    order = case_order(rows)
    for ax, metric in zip(axes, metrics, strict=True):
        m = rows[rows["metric"] == metric]
        sns.lineplot(data=m.assign(variant=m["case"]), x="step", y="value", hue="variant", hue_order=order,
                     palette=palette(order), errorbar=("ci", 95), n_boot=200, seed=0, ax=ax)
        zoom_to_late_steps(ax, m)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"{metric.replace('_', ' ')} ({unit_text(m)})")
        ax.set_title(f"{q['sweep'].iloc[0]}: {metric.replace('_', ' ')}, {seeds_text(m)}")
        place_legend(ax)
    return fig


def extrapolation(q: pd.DataFrame) -> Figure | str:
    """Validation loss against evaluation length; lengths a variant cannot evaluate are named, not drawn."""
    rows = q[(q["metric"] == "extrap_loss") & q["seq_len"].notna()]
    if rows.empty:
        return "no extrapolation rows (`extrap_loss`) in this sweep"
    cannot = rows[rows["value"].isna() | (rows["statistic"] == "cannot")]
    ok = rows.drop(cannot.index)
    if ok.empty:
        return "every extrapolation row is `cannot`: nothing to draw"
    fig, (ax,) = new_figure(width=6.0)
    rows = rows.assign(variant=_with_positions(rows))
    order = case_order(rows.assign(case=rows["variant"]))
    sns.lineplot(data=rows.loc[ok.index], x="seq_len", y="value", hue="variant", hue_order=order,
                 palette=palette(order), marker="o", errorbar=("ci", 95), n_boot=200, seed=0, ax=ax)
    log2_x_at(ax, rows["seq_len"])
    label = "evaluation length (tokens)"
    if not cannot.empty:  # named under the axis, never drawn as a number
        label += "\n" + "; ".join(f"{v}: cannot at {', '.join(str(int(t)) for t in sorted(g['seq_len'].unique()))}"
                                  for v, g in rows.loc[cannot.index].groupby("variant"))
    ax.set_xlabel(label)
    ax.set_ylabel(f"validation loss ({unit_text(ok)})")
    ax.set_title(f"{q['sweep'].iloc[0]}: loss at longer contexts, {seeds_text(ok)}")
    place_legend(ax)
    return fig


def _with_positions(rows: pd.DataFrame) -> pd.Series:
    """The baseline's label names its positions (``gpt2 (learned)``): the point of a length plot."""
    base = rows["variant"] == baseline_name(rows)
    return rows["case"].where(~base, rows["case"] + " (" + rows["pos"].astype(str) + ")")


def loss_by_position(q: pd.DataFrame) -> Figure | str:
    """Loss against position at each evaluation length: where past the training context a variant breaks."""
    rows = q[(q["metric"] == "loss_by_position") & q["position"].notna() & q["value"].notna()]
    if rows.empty:
        return "no `loss_by_position` rows in this sweep"
    lengths = sorted(rows["seq_len"].dropna().unique()) or [np.nan]
    fig, axes = new_figure(len(lengths), width=5.0)
    rows = rows.assign(variant=_with_positions(rows))
    order = case_order(rows.assign(case=rows["variant"]))
    trained = _training_context(q)
    for ax, length in zip(axes, lengths, strict=True):
        part = rows if pd.isna(length) else rows[rows["seq_len"] == length]
        # A variant with no rows at this length (learned positions past their table) gets no legend entry of a
        # line that is not there: it is named under the axis instead.
        drawn = [v for v in order if (part["variant"] == v).any()]
        sns.lineplot(data=part, x="position", y="value", hue="variant", hue_order=drawn, palette=palette(order),
                     errorbar=("ci", 95), n_boot=200, seed=0, ax=ax)
        if trained and part["position"].max() >= trained:
            ax.axvline(trained, color="0.4", ls="--", lw=1, label=f"training context ({trained})")
        absent = [v for v in order if v not in drawn]
        ax.set_xlabel("position in the sequence (tokens)"
                      + (f"\n{', '.join(absent)}: cannot at this length" if absent else ""))
        ax.set_ylabel(f"loss ({unit_text(part)})")
        ax.set_title("all lengths" if pd.isna(length) else f"evaluated at length {int(length)}")
        place_legend(ax)
    fig.suptitle(f"{q['sweep'].iloc[0]}: loss by position, {seeds_text(rows)}")
    return fig


def scale_effects(s: pd.DataFrame) -> Figure | str:
    """Validation loss and each variant's effect (paired difference from the baseline at the same width) against
    parameters on a log axis, with their intervals: the trend across quality-model widths."""
    v = s[(s["metric"] == "val_loss") & s["d_model"].notna() & s["mean"].notna()] if "d_model" in s else s.iloc[:0]
    if v["d_model"].nunique() < 2:
        return "one quality-model width in this sweep (`+sweep=scale` trains three)"
    fig, (left, right) = new_figure(2, width=5.2)
    base = summary_baseline(v)
    order = sorted(dict.fromkeys(v["variant"]), key=lambda variant: variant != base)
    colours = palette(order)
    own = v.drop_duplicates(["variant", "d_model"]).sort_values("params")
    effects = v[(v["reference"] == base) & (v["variant"] != base) & v["diff"].notna()].sort_values("params")
    for i, variant in enumerate(order):
        style = dict(color=colours[variant], marker=MARKERS[i % len(MARKERS)], capsize=3, label=variant)
        m = own[own["variant"] == variant]
        left.errorbar(m["params"], m["mean"], yerr=[m["mean"] - m["ci_lo"], m["ci_hi"] - m["mean"]], **style)
        e = effects[effects["variant"] == variant]
        if not e.empty:
            right.errorbar(e["params"], e["diff"], yerr=[e["diff"] - e["diff_lo"], e["diff_hi"] - e["diff"]], **style)
    right.axhline(0.0, color="0.4", lw=1, ls="--")
    unit = unit_text(v) if "unit" in v else "unitless"
    for ax in (left, right):
        log_x(ax)
        ax.set_xlabel("parameters of the quality model (log)")
    left.set_ylabel(f"validation loss ({unit}), mean [95% CI]")
    right.set_ylabel(f"Δ validation loss vs {base} at the same width")
    seeds = int(v["n"].max())
    left.set_title(f"{s['sweep'].iloc[0]}: loss against size, {seeds} seeds")
    right.set_title("effect against size, Holm-level interval")
    place_legend(right, handles=left.get_legend_handles_labels()[0], title="variant")
    return fig


def _training_context(q: pd.DataFrame) -> int | None:
    """The context the quality model trained at: ``seq_len`` of its final validation rows."""
    final = q[(q["metric"] == "val_loss") & (q["mode"] == "final") & q["seq_len"].notna()]
    return int(final["seq_len"].iloc[0]) if not final.empty else None


def lr_scan(q: pd.DataFrame) -> Figure | str:
    """Final loss against learning rate (log axis), mean over the scan seeds, one curve per arm, its best marked."""
    from ablations.report.lr_sections import scan_rows

    rows = scan_rows(q)
    if rows.empty:
        return "no learning-rate scan rows (`lr_scan_loss`: train.lr_scan=true) in this sweep"
    rows = rows[rows["budget"] == 1.0].assign(case=lambda f: f["variant"].astype(str))
    fig, (ax,) = new_figure(width=6.5)
    order = case_order(rows)
    colours = palette(order)
    means = rows.groupby(["case", "lr"])["value"].mean().reset_index()
    sns.lineplot(data=means, x="lr", y="value", hue="case", hue_order=order, palette=colours, style="case",
                 markers=[MARKERS[i % len(MARKERS)] for i in range(len(order))], dashes=False, ax=ax)
    for case, g in means.groupby("case"):
        best = g.loc[g["value"].idxmin()]
        ax.scatter([best["lr"]], [best["value"]], marker="*", s=220, color=colours[case], edgecolor="black",
                   zorder=5)
    finite = means["value"][np.isfinite(means["value"])]
    low = finite.min()
    ax.set_ylim(low - 0.02 * abs(low), min(finite.max(), low + 0.6))
    ax.set_xscale("log")
    rates = sorted(means["lr"].unique())
    ax.set_xticks(rates, [f"{r:.3g}" for r in rates], rotation=45)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("peak learning rate (log)")
    ax.set_ylabel(f"final validation loss ({unit_text(rows)})")
    # Each rate's mean is over the seeds it trained: the scan seeds, and the confirmation seeds too at the leaders.
    per_rate = rows.groupby(["variant", "lr"])["seed"].nunique()
    few, most = int(per_rate.min()), int(per_rate.max())
    seeds = f"{few} seed{'s' if few != 1 else ''}" + (f", {most} at the rates confirmed" if most != few else "")
    ax.set_title(f"{q['sweep'].iloc[0]}: loss against rate, mean of the scan seeds ({seeds}; ★ best)")
    place_legend(ax)
    return fig
