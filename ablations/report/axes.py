"""Axis ticks for the report's figures: log axes that carry several readable labels that never overlap.

matplotlib's own log ticks label powers of ten only, so a log axis spanning less than a decade (a latency
ratio from 0.6 to 1.1, a decode time from 2 to 9 ms) shows one label or none, and its minor ticks are labelled
in scientific notation (``6×10⁻¹``) that runs together on a narrow x axis. Every log axis of the report goes
through ``log_axis`` (ratio axes through ``log_ratio``): plain-number labels on the major ticks, spaced so that
neighbouring labels do not touch at the axis's drawn length, and unlabelled minor ticks with faint grid lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, MaxNLocator, NullFormatter, NullLocator

MIN_LABELS = 3
# Label extents in font sizes, upper bounds for DejaVu Sans: a digit is 0.64 em wide, a line 1.2 em high; the gap
# kept between neighbouring labels is half an em on an x axis, 0.3 em on a y axis.
CHAR_WIDTH, LINE_HEIGHT, X_GAP, Y_GAP = 0.64, 1.2, 0.5, 0.3


class ReadableLogLocator(Locator):
    """Major ticks of a log axis: 1-2-5 times each power of ten where that gives at least three ticks in view
    (only the powers past four decades); otherwise evenly spaced round numbers, as on a linear axis.

    On an axis (not when asked for ``tick_values`` alone) the choice is also one whose labels fit: neighbouring
    labels, as the axis's formatter writes them at its font size, may not touch at the axis's drawn length. When
    the preferred ticks crowd, coarser ones are taken (fewer round numbers, 1-3, powers of ten, every other power).
    """

    def __init__(self) -> None:
        self._one_two_five = LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=30)
        self._round = [MaxNLocator(nbins=n, steps=[1, 2, 2.5, 5, 10]) for n in (6, 5, 4, 3, 2)]
        self._one_three = LogLocator(base=10, subs=(1.0, 3.0), numticks=30)
        self._decades = LogLocator(base=10, subs=(1.0,), numticks=30)
        self._sparse = [LogLocator(base=10, subs=(1.0,), numticks=n) for n in (6, 4, 3, 2)]

    def __call__(self) -> np.ndarray:
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if vmin <= 0:  # a log axis never shows these; matplotlib clips them before asking
            vmin = vmax / 10 if vmax > 0 else 1.0
        candidates = [self._decades.tick_values(vmin, vmax)] if vmax / vmin > 1e4 else [
            self._one_two_five.tick_values(vmin, vmax),
            *([r.tick_values(vmin, vmax) for r in self._round] if vmax / vmin < 10 else []),
            self._one_three.tick_values(vmin, vmax), self._decades.tick_values(vmin, vmax)]
        candidates += [s.tick_values(vmin, vmax) for s in self._sparse]
        candidates = [values[values > 0] for values in candidates]
        for least in (MIN_LABELS, 2, 1):
            for ticks in candidates:
                if _in_view(ticks, vmin, vmax).size >= least and self._fits(ticks, vmin, vmax):
                    return ticks
        return candidates[-1]

    def _fits(self, ticks: np.ndarray, vmin: float, vmax: float) -> bool:
        """Whether neighbouring labels keep their gap on this axis (always, on no axis)."""
        axis = self.axis
        shown = _in_view(ticks, vmin, vmax)
        if axis is None or shown.size < 2 or vmax <= vmin:
            return True
        size = axis.get_major_ticks(1)[0].label1.get_fontsize()
        box = axis.axes.get_window_extent()
        length = (box.width if axis.axis_name == "x" else box.height) * 72 / axis.axes.figure.dpi
        at = length * (np.log(shown) - np.log(vmin)) / (np.log(vmax) - np.log(vmin))
        if axis.axis_name == "x":
            widths = np.array([CHAR_WIDTH * size * len(t) for t in axis.major.formatter.format_ticks(list(shown))])
            need = (widths[:-1] + widths[1:]) / 2 + X_GAP * size
        else:
            need = np.full(shown.size - 1, (LINE_HEIGHT + Y_GAP) * size)
        return bool((np.diff(at) >= need).all())


def _in_view(ticks: np.ndarray, vmin: float, vmax: float) -> np.ndarray:
    slack = 1e-9 * vmax
    return ticks[(ticks >= vmin - slack) & (ticks <= vmax + slack)]


def plain_number(v: float, _: object = None) -> str:
    """``0.9``, ``2``, ``1000``: at most six significant figures, no float noise, no exponent below a million."""
    return f"{float(f'{v:.6g}'):g}"


def si_number(v: float, _: object = None) -> str:
    """``500``, ``200k``, ``1.5M``, ``7B``: a count as an axis label."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{float(f'{v / scale:.3g}'):g}{suffix}"
    return plain_number(v)


def log_axis(ax: Axes, which: str = "y", label: Callable[[float, object], str] = plain_number) -> None:
    """Log scale on ``ax``'s ``which`` axis (``"x"`` or ``"y"``): major ticks from ``ReadableLogLocator``, written by
    ``label``; minor ticks at each 1-9 multiple of a power of ten, unlabelled, drawn as faint grid lines."""
    axis: Axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(ReadableLogLocator())
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_locator(LogLocator(base=10, subs=np.arange(1.0, 10.0), numticks=30))
    axis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="minor", axis=which, color="0.92", linewidth=0.6)


def log_ratio(ax: Axes, which: str = "y") -> None:
    """A ratio (variant / baseline, predicted / measured) on a log axis, so that 0.5 and 2 lie as far from 1: read
    as plain decimals (0.6, 0.8, 1, 1.5, 2), never powers of ten. Every log-scaled ratio axis of the report."""
    log_axis(ax, which, plain_number)


def log_x(ax: Axes) -> None:
    """Log x axis for counts (parameters) with several labels whatever its span: ``200k``, ``500k``, ``1M``."""
    log_axis(ax, "x", si_number)


def log2_x_at(ax: Axes, values: Iterable[float]) -> None:
    """Log-2 x axis ticked at the values measured (sequence or context lengths), written as plain numbers."""
    ax.set_xscale("log", base=2)
    ticks = sorted({int(v) for v in values if not np.isnan(v)})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())


def loglog(ax: Axes, lengths: Iterable[float]) -> None:
    """Lengths on a log-2 x axis at the measured values, a ratio on a log y axis."""
    log2_x_at(ax, lengths)
    log_ratio(ax, "y")
