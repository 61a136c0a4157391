"""Axis ticks for the report's figures: log axes that always carry several readable labels.

matplotlib's own log ticks label powers of ten only, so a log axis spanning less than a decade (a latency
ratio from 0.6 to 1.1, a decode time from 2 to 9 ms) shows one label or none.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, MaxNLocator, NullFormatter, NullLocator

MIN_LABELS = 3


class ReadableLogLocator(Locator):
    """Major ticks of a log axis: 1-2-5 times each power of ten where that gives at least three ticks in view
    (only the powers past four decades); otherwise evenly spaced round numbers, as on a linear axis."""

    def __init__(self) -> None:
        self._decades = LogLocator(base=10, subs=(1.0,))
        self._one_two_five = LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=30)
        self._round = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10])

    def __call__(self) -> np.ndarray:
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if vmin <= 0:  # a log axis never shows these; matplotlib clips them before asking
            vmin = vmax / 10 if vmax > 0 else 1.0
        if vmax / vmin > 1e4:
            return self._decades.tick_values(vmin, vmax)
        ticks = self._one_two_five.tick_values(vmin, vmax)
        if ((ticks >= vmin) & (ticks <= vmax)).sum() >= MIN_LABELS:
            return ticks
        ticks = self._round.tick_values(vmin, vmax)
        return ticks[ticks > 0]


def plain_number(v: float, _: object = None) -> str:
    """``0.9``, ``2``, ``1000``: at most six significant figures, no float noise, no exponent below a million."""
    return f"{float(f'{v:.6g}'):g}"


def log_y(ax: Axes) -> None:
    """Log y axis with several plain-number labels whatever its span; no minor ticks (grid lines only at labels)."""
    ax.set_yscale("log")
    _readable(ax.yaxis, plain_number)


def _readable(axis: object, label: object) -> None:
    axis.set_major_locator(ReadableLogLocator())
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def si_number(v: float, _: object = None) -> str:
    """``500``, ``200k``, ``1.5M``, ``7B``: a count as an axis label."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{float(f'{v / scale:.3g}'):g}{suffix}"
    return plain_number(v)


def log_x(ax: Axes) -> None:
    """Log x axis for counts (parameters) with several labels whatever its span: ``200k``, ``500k``, ``1M``."""
    ax.set_xscale("log")
    _readable(ax.xaxis, si_number)


def log2_x_at(ax: Axes, values: Iterable[float]) -> None:
    """Log-2 x axis ticked at the values measured (sequence or context lengths), written as plain numbers."""
    ax.set_xscale("log", base=2)
    ticks = sorted({int(v) for v in values if not np.isnan(v)})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())


def loglog(ax: Axes, lengths: Iterable[float]) -> None:
    log2_x_at(ax, lengths)
    log_y(ax)
