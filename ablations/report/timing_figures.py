"""The figures of a sweep's timings: paired latency ratios (bars, against sequence length, decode against context),
measured against roofline ratios, and the calibrated model against measurement. Each builder takes one sweep's rows
and returns a ``Figure``, or a string saying why there is nothing to draw."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ablations.report.axes import log_axis, log_ratio, loglog
from ablations.report.figure_style import MARKERS, PALETTE, case_order, new_figure, palette, place_legend
from ablations.report.tables import baseline_name, with_intervals
from ablations.roofline.hardware import Hardware


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
    fig, (ax,) = new_figure(width=max(5.5, 1.1 * len(cmp) * len(series) / 2 + 2))
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
    names = [f"{case}\n(A/A noise floor)" if floor else str(case) for case, floor in zip(cmp["case"], own, strict=True)]
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
    fig, axes = new_figure(len(modes))
    order = case_order(rows)
    for ax, mode in zip(axes, modes, strict=True):
        handles = _ratio_lines(ax, rows[rows["mode"] == mode], "case", order)
        loglog(ax, rows["seq_len"])
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel(f"{mode} time, variant / baseline (×)")
        ax.set_title(f"{s['sweep'].iloc[0]}: {mode}, paired ratio")
        place_legend(ax, handles, "variant")
    return fig


def decode_ratio_vs_context(s: pd.DataFrame) -> Figure | str:
    """Paired decode-step ratio against context length, one line per variant (its n_kv_heads) and batch."""
    rows = s[(s["metric"] == "decode_latency_ratio") & (s["mode"] == "decode")]
    if rows.empty:
        return "no paired decode timing rows in this sweep"
    rows = with_intervals(rows, s, "decode_ratio_interval")
    kv = "variant (n_kv_heads)"
    rows = rows.assign(**{kv: rows["case"] + " (" + rows["n_kv_heads"].astype(int).astype(str) + ")"})
    order = [k for case in case_order(rows) for k in dict.fromkeys(rows.loc[rows["case"] == case, kv])]
    fig, (ax,) = new_figure(width=6.5)
    handles = _ratio_lines(ax, rows, kv, order)
    loglog(ax, rows["seq_len"])
    ax.set_xlabel("context length (cached tokens)")
    ax.set_ylabel("decode step time, variant / baseline (×)")
    ax.set_title(f"{s['sweep'].iloc[0]}: one decode step with a KV cache, paired ratio")
    place_legend(ax, handles, kv)
    return fig


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
    drawn: list[tuple[float, float, float, float, tuple]] = []
    for i, (h, b) in enumerate(series):
        m = rows[(rows[hue] == h) & (rows["batch"] == b)].groupby("seq_len")[["value", "lo", "hi"]].median()
        v, lo, hi = (m[k].to_numpy(dtype=float) for k in ("value", "lo", "hi"))
        err = np.clip(np.vstack([np.nan_to_num(v - lo), np.nan_to_num(hi - v)]), 0, None)
        x = m.index.to_numpy(dtype=float) * 2 ** (step * (i - (len(series) - 1) / 2))
        ax.errorbar(x, v, yerr=err, color=colours[h], marker=markers[b], ms=5, lw=1.5, capsize=2, elinewidth=1,
                    zorder=2)
        drawn += list(zip(x, v, lo, hi, [colours[h]] * len(x), strict=True))
    clipped = clip_outliers(ax, drawn)
    handles = [Line2D([], [], color=colours[h], lw=1.5, label=h) for h in order]
    if clipped:
        handles.append(Line2D([], [], color="0.3", marker="^", ls="none", label="interval past the axis (its end)"))
    handles += [Line2D([], [], color="0.3", marker=mk, ls="none", label=f"B={int(b)}") for b, mk in markers.items()]
    handles.append(Line2D([], [], color="0.3", lw=1, label="1 = baseline's time"))
    return handles


# How far past the medians' range an interval's end may reach before it is clipped, in log ratio: OUTLIER_REACH of
# that range, or OUTLIER_WIDTHS times the typical interval's half-width, whichever is more (at least OUTLIER_FLOOR).
# One wide interval must not flatten the panel the medians are read from; intervals all wide are all shown.
OUTLIER_REACH, OUTLIER_WIDTHS, OUTLIER_FLOOR = 1.0, 2.0, 0.05


def ratio_limits(points: np.ndarray) -> tuple[float, float] | None:
    """A ratio axis's limits for rows of (median, lo, hi): the medians' range and 1, widened either side by the reach
    above; None without a finite median."""
    ok = np.isfinite(points).all(axis=1) & (points > 0).all(axis=1)
    v, lo, hi = (np.log(points[ok, i]) for i in range(3))
    if v.size == 0:
        return None
    half = float(np.median(np.maximum(hi - v, v - lo)))
    low, high = min(v.min(), 0.0), max(v.max(), 0.0)
    reach = max(OUTLIER_REACH * (high - low), OUTLIER_WIDTHS * half, OUTLIER_FLOOR)
    return float(np.exp(low - reach)), float(np.exp(high + reach))


def clip_outliers(ax: Axes, points: list[tuple[float, float, float, float, tuple]]) -> int:
    """Limit a ratio axis to ``ratio_limits`` of the medians of ``points`` (x, median, lo, hi, colour); each interval
    end past a limit is drawn to the edge and marked there with an arrowhead and its value. Returns how many were."""
    limits = ratio_limits(np.array([p[1:4] for p in points], dtype=float).reshape(-1, 3))
    if limits is None:
        return 0
    bottom, top = limits
    past = [(x, end, colour) for x, _, lo, hi, colour in points for end in (lo, hi)
            if np.isfinite(end) and not bottom <= end <= top]
    if not past:
        return 0
    ax.set_ylim(bottom, top)
    for x, end, colour in past:
        edge, marker, va = (top, "^", "top") if end > top else (bottom, "v", "bottom")
        ax.plot([x], [edge], marker=marker, color=colour, ms=7, clip_on=False, zorder=3)
        ax.annotate(f"{end:.3g}", (x, edge), xytext=(4, -2 if va == "top" else 2), textcoords="offset points",
                    fontsize=7, color="0.25", va=va, annotation_clip=False)
    return len(past)


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


def predicted_vs_measured(s: pd.DataFrame, hw: Hardware | None) -> Figure | str:
    """The calibrated model's ratio and absolute time against the measured ones, every point (``hw``: the
    calibration recorded beside the rows)."""
    from ablations.report.roofline import no_calibration, points, validation

    if hw is None:
        return no_calibration()
    p = points(s)
    v = validation(p, hw) if not p.empty else p
    if v.empty:
        return "no measured CPU points in the calibration's dtype"
    fig, axes = new_figure(ncols=2, width=5.0)
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
        fig, (ax,) = new_figure(width=6.0)
    colours = palette(order or case_order(p))
    present = [case for case in colours if case in set(p["case"])]
    # Variants often share a ratio (a choice that moves no bytes at a shape): each case's markers a size smaller
    # than the one drawn before, ringed in white, so a point on another shows as a ring inside it, never hidden.
    sizes = dict(zip(present, np.linspace(140, 40, len(present)) if len(present) > 1 else [80], strict=True))
    p = p.iloc[np.argsort(p["case"].map({case: i for i, case in enumerate(present)}).to_numpy(), kind="stable")]
    sns.scatterplot(data=p, x=x, y=y, hue="case", style="mode", hue_order=present, size="case", sizes=sizes,
                    size_order=present, palette={case: colours[case] for case in present}, edgecolor="white",
                    linewidth=0.8, legend="brief", ax=ax)
    lo, hi = min(p[x].min(), p[y].min()), max(p[x].max(), p[y].max())
    ax.plot([lo, hi], [lo, hi], color="0.5", linestyle="--", linewidth=1, label=line)
    if scale is not None:
        scale(ax, "x")
        scale(ax, "y")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    place_legend(ax)
    return fig
