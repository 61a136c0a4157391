"""The report's figures: seaborn on matplotlib's Agg backend, PNG and SVG, labelled axes with units.

Each builder takes one sweep's rows and returns a ``Figure``, or a string saying why there is nothing to
draw; the report then writes that line instead of an empty or invented figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a window, and the same output on every machine

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from ablations.report.axes import log2_x_at, log_axis, log_ratio, log_x, loglog  # noqa: E402
from ablations.report.figure_files import remove_stale  # noqa: E402
from ablations.report.tables import BASELINE, baseline_name, summary_baseline, with_intervals  # noqa: E402
from ablations.report.worth_figures import by_horizon, cost_quality, multipliers  # noqa: E402
from ablations.results.durable import write_atomic  # noqa: E402

# Deterministic SVGs (fixed element ids, no date), so a rebuilt reference report diffs only where data changed.
# Text stays text in the SVGs (searchable, editable).
STYLE = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=0.9),
         "svg.hashsalt": "blockbench", "svg.fonttype": "none"}
PALETTE = "colorblind"

Builder = Callable[[pd.DataFrame], "Figure | str"]


def palette(cases: list[str]) -> dict[str, tuple]:
    """One colour per variant, the baseline first, stable across a sweep's figures."""
    return dict(zip(cases, sns.color_palette(PALETTE, max(len(cases), 1)), strict=False))


def case_order(frame: pd.DataFrame) -> list[str]:
    cases = list(dict.fromkeys(frame["case"]))
    base = baseline_name(frame) if "baseline" in frame else BASELINE
    return sorted(cases, key=lambda c: not c.startswith(base))


def _figure(ncols: int = 1, width: float = 5.5, height: float = 4.0) -> tuple[Figure, list]:
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


# --- builders -----------------------------------------------------------------------------------------

def ratio_bars(cmp: pd.DataFrame) -> Figure | str:
    """Paired latency ratio per variant (forward, train, decode) with its 95% interval, drawn from 1; the baseline's
    own bar (it timed against itself) hatched: the A/A noise floor, not a result."""
    series = [(key, label) for key, label in (
        ("fwd", f"forward {cmp['shape'].iloc[0]}"),
        ("train", f"train {cmp['shape'].iloc[0]}"),
        ("decode", _decode_label(cmp)),
    ) if cmp[key].notna().any()]
    if not series:
        return "no paired latency ratios in this sweep (timing was skipped or failed)"
    fig, (ax,) = _figure(width=max(5.5, 1.1 * len(cmp) * len(series) / 2 + 2))
    x = np.arange(len(cmp))
    width = 0.8 / len(series)
    colours = sns.color_palette(PALETTE, len(series))
    own = (cmp["variant"] == cmp["baseline"]).to_numpy() if "baseline" in cmp else np.zeros(len(cmp), dtype=bool)
    for i, (key, label) in enumerate(series):
        v, lo, hi = (cmp[k].to_numpy(dtype=float) for k in (key, *_interval_keys(cmp, key)))
        pos = x + (i - (len(series) - 1) / 2) * width
        # Bars start at 1 (the baseline), so up is slower and down is faster.
        ax.bar(pos, v - 1, width, bottom=1, label=label, color=colours[i])
        # The baseline against itself: hatched over, unlabelled, so the legend's colours stay plain.
        ax.bar(pos[own], (v - 1)[own], width, bottom=1, color="none", edgecolor="0.2", hatch="//", lw=0)
        err = np.vstack([np.nan_to_num(v - lo), np.nan_to_num(hi - v)])
        ax.errorbar(pos, v, yerr=np.clip(err, 0, None), fmt="none", ecolor="0.2", capsize=3, lw=1)
    ax.axhline(1, color="0.3", lw=1)
    names = [f"{c}\n(A/A noise floor)" if floor else str(c) for c, floor in zip(cmp["case"], own, strict=True)]
    ax.set_xticks(x, names, rotation=20 if len(cmp) > 4 else 0, ha="right" if len(cmp) > 4 else "center")
    ax.set_xlabel("variant")
    ax.set_ylabel("latency ratio, variant / baseline (×)")
    bars_are = "95% interval" if _interval_keys(cmp, series[0][0])[0].endswith("_ci_lo") else "p25–p75 spread"
    ax.set_title(f"{cmp['sweep'].iloc[0]}: paired latency ratio (median, bars {bars_are})")
    ax.legend(title="measurement", fontsize="small")
    return fig


def _interval_keys(cmp: pd.DataFrame, key: str) -> tuple[str, str]:
    """The columns of ``key``'s 95% interval, or of its rounds' quartiles in a table written before the intervals."""
    ci = (f"{key}_ci_lo", f"{key}_ci_hi")
    return ci if ci[0] in cmp and cmp[ci[0]].notna().any() else (f"{key}_lo", f"{key}_hi")


def _decode_label(cmp: pd.DataFrame) -> str:
    if cmp["decode_ctx"].isna().all():
        return "decode"
    return f"decode B={int(cmp['decode_batch'].iloc[0])}, ctx {int(cmp['decode_ctx'].iloc[0])}"


def ratio_vs_seq(s: pd.DataFrame) -> Figure | str:
    """Paired latency ratio against sequence length per variant and batch; forward and train side by side.

    Ratios, never absolute times: each sweep point is timed minutes after the last, and the machine's speed
    drifts between points by more than most effects, while both sides of one pairing drift together.
    """
    rows = s[(s["metric"] == "latency_ratio") & s["mode"].isin(("forward", "train"))]
    if rows.empty:
        return "no paired latency ratios in this sweep (timing was skipped or failed)"
    rows = with_intervals(rows, s, "ratio_interval")
    modes = [m for m in ("forward", "train") if (rows["mode"] == m).any()]
    fig, axes = _figure(len(modes))
    order = case_order(rows)
    for ax, mode in zip(axes, modes, strict=True):
        handles = _ratio_lines(ax, rows[rows["mode"] == mode], "case", order)
        loglog(ax, rows["seq_len"])
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel(f"{mode} time, variant / baseline (×)")
        ax.set_title(f"{s['sweep'].iloc[0]}: {mode}, paired ratio")
        _legend(ax, handles, "variant")
    return fig


def decode_ratio_vs_context(s: pd.DataFrame) -> Figure | str:
    """Paired decode-step ratio against context length, one line per variant (its n_kv_heads) and batch."""
    rows = s[(s["metric"] == "decode_latency_ratio") & (s["mode"] == "decode")]
    if rows.empty:
        return "no paired decode timing rows in this sweep"
    rows = with_intervals(rows, s, "decode_ratio_interval")
    kv = "variant (n_kv_heads)"
    rows = rows.assign(**{kv: rows["case"] + " (" + rows["n_kv_heads"].astype(int).astype(str) + ")"})
    order = [k for c in case_order(rows) for k in dict.fromkeys(rows.loc[rows["case"] == c, kv])]
    fig, (ax,) = _figure(width=6.5)
    handles = _ratio_lines(ax, rows, kv, order)
    loglog(ax, rows["seq_len"])
    ax.set_xlabel("context length (cached tokens)")
    ax.set_ylabel("decode step time, variant / baseline (×)")
    ax.set_title(f"{s['sweep'].iloc[0]}: one decode step with a KV cache, paired ratio")
    _legend(ax, handles, kv)
    return fig


MARKERS = ("o", "X", "s", "^", "D", "v")


def _ratio_lines(ax: Axes, rows: pd.DataFrame, hue: str, order: list[str]) -> list[Line2D]:
    """One line per ``hue`` value and batch: median ratio with its 95% interval (``with_intervals``), and the line of
    no difference;
    the legend's handles (colour per hue, marker per batch).

    Lines near 1 overlap, so each line is nudged sideways by a few percent of a doubling; the ticks stay at the
    measured lengths."""
    colours = palette(order)
    batches = sorted(rows["batch"].dropna().unique())
    markers = dict(zip(batches, MARKERS * len(batches), strict=False))
    series = [(h, b) for h in order for b in batches if ((rows[hue] == h) & (rows["batch"] == b)).any()]
    step = min(0.04, 0.3 / max(len(series) - 1, 1))  # in doublings: at most 0.3 between the outermost
    ax.axhline(1, color="0.3", lw=1, zorder=1)
    for i, (h, b) in enumerate(series):
        m = rows[(rows[hue] == h) & (rows["batch"] == b)].groupby("seq_len")[["value", "lo", "hi"]].median()
        v, lo, hi = (m[k].to_numpy(dtype=float) for k in ("value", "lo", "hi"))
        err = np.clip(np.vstack([np.nan_to_num(v - lo), np.nan_to_num(hi - v)]), 0, None)
        x = m.index.to_numpy(dtype=float) * 2 ** (step * (i - (len(series) - 1) / 2))
        ax.errorbar(x, v, yerr=err, color=colours[h], marker=markers[b], ms=5, lw=1.5, capsize=2, elinewidth=1,
                    zorder=2)
    handles = [Line2D([], [], color=colours[h], lw=1.5, label=h) for h in order]
    handles += [Line2D([], [], color="0.3", marker=mk, ls="none", label=f"B={int(b)}") for b, mk in markers.items()]
    handles.append(Line2D([], [], color="0.3", lw=1, label="1 = baseline's time"))
    return handles


def measured_vs_roofline(s: pd.DataFrame) -> Figure | str:
    """Each point's measured paired ratio against its roofline ratio; on the diagonal the design's FLOPs/bytes
    alone explain the time."""
    from ablations.report.roofline import points

    p = points(s)
    p = p[p["roofline_ratio"].notna() & (p["case"] != p["base_case"])] if not p.empty else p
    if p.empty:
        return "no roofline ratios beside measured ones (timing skipped, or only the baseline)"
    return _diagonal(p, "roofline_ratio", "measured_ratio", f"roofline ratio (variant / {baseline_name(p)})",
                     f"measured ratio (variant / {baseline_name(p)}, paired median)",
                     f"{s['sweep'].iloc[0]}: measured vs roofline (log-log)", scale=log_ratio,
                     line="measured = roofline")


def predicted_vs_measured(s: pd.DataFrame) -> Figure | str:
    """The calibrated model's ratio and absolute time against the measured ones, every point."""
    from ablations.report.roofline import calibration, no_calibration, points, validation

    hw = calibration()
    if hw is None:
        return no_calibration()
    p = points(s)
    v = validation(p, hw) if not p.empty else p
    if v.empty:
        return "no measured CPU points in the calibration's dtype"
    fig, axes = _figure(ncols=2, width=5.0)
    order = case_order(v)  # one colour per case in both panels
    flips = v[v["case"] != v["base_case"]]
    if not flips.empty:
        _diagonal(flips, "predicted_ratio", "measured_ratio", f"predicted ratio (variant / {baseline_name(flips)})",
                  "measured ratio (paired median)", "ratios (log-log)", ax=axes[0], scale=log_ratio, order=order)
    t = v.assign(predicted_ms=1e3 * v["predicted_s"], measured_ms=1e3 * v["latency"])
    _diagonal(t, "predicted_ms", "measured_ms", "predicted time (ms)", "measured time (ms, median)",
              "absolute times (log-log)", ax=axes[1], scale=log_axis, order=order)
    fig.suptitle(f"{s['sweep'].iloc[0]}: performance model against measurement")
    return fig


def _diagonal(p: pd.DataFrame, x: str, y: str, xlabel: str, ylabel: str, title: str, ax: object = None,
              scale: Callable[[Axes, str], None] | None = None, order: list[str] | None = None,
              line: str = "measured = predicted") -> Figure | None:
    """``y`` against ``x``, one colour per case and a marker per mode, and the line where they are equal; ``scale``
    (``log_ratio`` or ``log_axis``) sets both axes."""
    fig = None
    if ax is None:
        fig, (ax,) = _figure(width=6.0)
    colours = palette(order or case_order(p))
    present = [c for c in colours if c in set(p["case"])]
    sns.scatterplot(data=p, x=x, y=y, hue="case", style="mode", hue_order=present,
                    palette={c: colours[c] for c in present}, ax=ax)
    lo, hi = min(p[x].min(), p[y].min()), max(p[x].max(), p[y].max())
    ax.plot([lo, hi], [lo, hi], color="0.5", linestyle="--", linewidth=1, label=line)
    if scale is not None:
        scale(ax, "x")
        scale(ax, "y")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _legend(ax)
    return fig


def training_curves(q: pd.DataFrame) -> Figure | str:
    """Train and validation loss against step, mean over seeds with a 95% bootstrap band."""
    rows = q[q["metric"].isin(("train_loss", "val_loss")) & (q["mode"] == "curve") & q["step"].notna()]
    if rows.empty:
        return "no training-curve rows (`train_loss`/`val_loss`, mode `curve`) in this sweep"
    metrics = [m for m in ("train_loss", "val_loss") if (rows["metric"] == m).any()]
    fig, axes = _figure(len(metrics))
    order = case_order(rows)
    for ax, metric in zip(axes, metrics, strict=True):
        m = rows[rows["metric"] == metric]
        sns.lineplot(data=m.assign(variant=m["case"]), x="step", y="value", hue="variant", hue_order=order,
                     palette=palette(order), errorbar=("ci", 95), n_boot=200, seed=0, ax=ax)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"{metric.replace('_', ' ')} ({_unit(m)})")
        ax.set_title(f"{q['sweep'].iloc[0]}: {metric.replace('_', ' ')}, {_seeds(m)}")
        _legend(ax)
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
    fig, (ax,) = _figure(width=6.0)
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
    ax.set_ylabel(f"validation loss ({_unit(ok)})")
    ax.set_title(f"{q['sweep'].iloc[0]}: loss at longer contexts, {_seeds(ok)}")
    _legend(ax)
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
    fig, axes = _figure(len(lengths), width=5.0)
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
        ax.set_ylabel(f"loss ({_unit(part)})")
        ax.set_title("all lengths" if pd.isna(length) else f"evaluated at length {int(length)}")
        _legend(ax)
    fig.suptitle(f"{q['sweep'].iloc[0]}: loss by position, {_seeds(rows)}")
    return fig


def scale_effects(s: pd.DataFrame) -> Figure | str:
    """Validation loss and each variant's effect (paired difference from the baseline at the same width) against
    parameters on a log axis, with their intervals: the trend across quality-model widths."""
    v = s[(s["metric"] == "val_loss") & s["d_model"].notna() & s["mean"].notna()] if "d_model" in s else s.iloc[:0]
    if v["d_model"].nunique() < 2:
        return "one quality-model width in this sweep (`+sweep=scale` trains three)"
    fig, (left, right) = _figure(2, width=5.2)
    base = summary_baseline(v)
    order = sorted(dict.fromkeys(v["variant"]), key=lambda c: c != base)
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
    unit = _unit(v) if "unit" in v else "unitless"
    for ax in (left, right):
        log_x(ax)
        ax.set_xlabel("parameters of the quality model (log)")
    left.set_ylabel(f"validation loss ({unit}), mean [95% CI]")
    right.set_ylabel(f"Δ validation loss vs {base} at the same width")
    seeds = int(v["n"].max())
    left.set_title(f"{s['sweep'].iloc[0]}: loss against size, {seeds} seeds")
    right.set_title("effect against size, Holm-level interval")
    _legend(right, handles=left.get_legend_handles_labels()[0], title="variant")
    return fig


def _training_context(q: pd.DataFrame) -> int | None:
    """The context the quality model trained at: ``seq_len`` of its final validation rows."""
    final = q[(q["metric"] == "val_loss") & (q["mode"] == "final") & q["seq_len"].notna()]
    return int(final["seq_len"].iloc[0]) if not final.empty else None


def _legend(ax: Axes, handles: list[Line2D] | None = None, title: str | None = None) -> None:
    # Outside the axes: inside, a legend of five variants hides the very lines it names.
    if handles or ax.get_legend() is not None or ax.get_legend_handles_labels()[0]:
        ax.legend(**({"handles": handles, "title": title} if handles else {}), fontsize="small", loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _unit(rows: pd.DataFrame) -> str:
    units = rows["unit"].dropna().unique()
    return ", ".join(map(str, units)) or "unitless"


def _seeds(rows: pd.DataFrame) -> str:
    n = rows["seed"].nunique()
    return f"{n} seed{'s' if n != 1 else ''}" + (", band 95% bootstrap CI" if n > 1 else "")


# --- drawing a report's worth -------------------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """One figure of a sweep: its file stem, title (alt text and skip line), caption note, frame and builder."""

    stem: str
    title: str
    source: str
    build: Builder
    note: str = ""


PAIRED = ("Every point is the variant's time over its baseline's (the block the sweep pairs with: `gpt2` unless it "
          "ran with baseline=llama2) from the same pairing (both timed in alternating rounds of one process), median "
          "with its 95% interval; 1 is no difference and the baseline's own line, it against itself, is the noise "
          "floor. Absolute times of different points are not drawn: the points "
          "ran minutes apart and the machine's speed drifts between them by more than most effects.")
FIGURES: list[Kind] = [
    Kind("ratios", "Paired latency ratio against the baseline", "cmp", ratio_bars,
         "Variant time over the baseline's from the same rounds, median with its 95% interval; bars start at 1. The "
         "hatched bar is the baseline timed against itself: the A/A noise floor a variant's bar must clear."),
    Kind("latency-ratio-vs-seq", "Paired latency ratio against sequence length", "measured", ratio_vs_seq,
         PAIRED + " The speed table's tokens/s are the absolute figures."),
    Kind("decode-ratio-vs-context", "Paired decode-step ratio against context length, per n_kv_heads", "measured",
         decode_ratio_vs_context, PAIRED + " Each round decodes from fresh copies of both caches and weights; the "
         "speed table's decode ms/step is the absolute figure at the longest context."),
    Kind("roofline", "Measured ratio against roofline ratio, every timed point", "measured", measured_vs_roofline,
         "One point per variant, mode and shape. x: the variant's roofline time over the baseline's at the same "
         "shape (FLOPs and bytes of the work model at this run's measured ceilings); y: the variant's time over the "
         "baseline's from the same pairing, median. On the dashed diagonal the FLOPs and bytes the design choice "
         "moved explain the measured ratio; the baseline against itself (1 on both axes) is left out."),
    Kind("prediction", "Performance model against measurement: ratios and absolute times", "measured",
         predicted_vs_measured,
         "Left, one point per variant, mode and shape: the calibrated model's time for the variant over its time for "
         "the baseline at the same shape, against the measured ratio (variant over baseline from the same "
         "pairing, median). Right, every timed point, the baseline's included: its predicted time against its "
         "measured median time, which carries the machine's drift between points. Dashed: prediction = "
         "measurement."),
    Kind("training-curves", "Training curves over seeds", "quality", training_curves,
         "Each variant's loss against training step, mean over its seeds with a 95% bootstrap band. For one seed "
         "every variant trains on the same bytes in the same order and is scored on the same validation bytes (the "
         "quality table pairs the variants by seed); the bands are over seeds, not over those pairs."),
    Kind("extrapolation", "Loss against evaluation length", "quality", extrapolation,
         "Each trained variant's validation loss at each evaluation length: every length and every variant predicts "
         "the same validation bytes, only the context differs. Mean over seeds with a 95% bootstrap band; a length a "
         "variant cannot evaluate (learned positions past their table) is named under the axis, not drawn."),
    Kind("loss-by-position", "Loss by position", "quality", loss_by_position,
         "Each variant's loss at each position of the same validation windows, one panel per evaluation length, "
         "mean over seeds with a 95% bootstrap band; the dashed line is the training context."),
    Kind("multipliers", "Compute multiplier per comparison", "worth", multipliers,
         "Training FLOPs the baseline needs to reach the variant's final loss, as a multiple of what the variant used, "
         "per seed on that seed's own curve of the baseline at several budgets; geometric mean over seeds with its "
         "95% interval (log axis; dashed: 1×, no gain). A bar ending in a label is a bound: past the budgets trained. "
         "Grey: the known answers, each with the value (|) its interval must hold."),
    Kind("k-vs-horizon", "Compute multiplier against training length", "worth", by_horizon,
         "Each choice's multiplier in FLOPs at each training horizon of one width, against the baseline's training "
         "bytes per parameter (log axes; dashed: 1×, no gain); 95% intervals over seeds with the curve fit's "
         "left-out-knot error added. Each horizon has its own budget curve, so k is in that horizon's compute."),
    Kind("cost-quality", "Cost against quality", "worth", cost_quality,
         "x: the quality model's train-step time, variant over baseline, paired in one process (95% interval); y: "
         "the multiplier in steps (95% interval). On a dashed line the variant reaches the baseline's final loss "
         "that many times sooner in wall time; up and to the left is better."),
    Kind("scale", "Validation loss and each effect against parameters", "summary",
         scale_effects,
         "Left: each variant's mean over seeds with its 95% Student-t interval at each quality-model width. Right: "
         "the variant minus the baseline trained at the same width, paired by seed, with the interval at the level "
         "Holm holds it to (it excludes 0 exactly when the verdict names a difference). x is each variant's own "
         "parameter count; every width trains on the same tokens."),
]


ABSENT = {"measured": "no block measurements in this sweep", "cmp": "no variant compared with the baseline",
          "worth": "no compute multipliers in this sweep (train.budgets=[])",
          "quality": "no quality rows (training runs) in this sweep",
          "summary": "no quality comparisons in this sweep"}


def save(fig: Figure, folder: Path, stem: str) -> list[Path]:
    """PNG and SVG of ``fig``, each written whole or not at all: a full disk leaves the previous build's file."""
    png, svg = folder / f"{stem}.png", folder / f"{stem}.svg"
    write_atomic(png, lambda f: fig.savefig(f, format="png", dpi=150, metadata={"Software": None},
                                            bbox_inches="tight"))
    write_atomic(svg, lambda f: fig.savefig(f, format="svg", metadata={"Date": None}, bbox_inches="tight"))
    return [png, svg]


def draw_all(folder: Path, sweeps: list[str], measured: pd.DataFrame, quality: pd.DataFrame,
             cmp: pd.DataFrame, summary: pd.DataFrame | None = None,
             worth: pd.DataFrame | None = None) -> dict[str, list[str]]:
    """Every figure of every sweep into ``folder``; per sweep, the markdown lines (images or skip notes).

    Stale figures of an earlier build are removed, so the folder holds exactly what REPORT.md shows.
    """
    frames = {"measured": measured, "quality": quality, "cmp": cmp,
              "summary": summary if summary is not None else pd.DataFrame(),
              "worth": worth if worth is not None else pd.DataFrame()}
    written: set[Path] = set()
    lines: dict[str, list[str]] = {}
    with matplotlib.rc_context(STYLE):
        for sweep in sweeps:
            lines[sweep], skipped = [], []
            for kind in FIGURES:
                frame = frames[kind.source]
                data = frame[frame["sweep"] == sweep] if not frame.empty else frame
                result = kind.build(data) if not data.empty else ABSENT[kind.source]
                name = f"{sweep}-{kind.stem}"
                if isinstance(result, str):
                    skipped.append(f"- *{kind.title}: skipped, {result}.*")
                    continue
                paths = save(result, folder, name)
                written.update(paths)
                note = f" {kind.note}" if kind.note else ""
                lines[sweep] += [f"![{kind.title}]({folder.name}/{name}.png)", "",
                                 f"*{kind.title}.*{note} ([SVG]({folder.name}/{name}.svg))", ""]
            lines[sweep] += skipped
    remove_stale(folder, written)
    return lines
