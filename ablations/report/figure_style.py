"""The report's figure style and what every figure builder shares: seaborn on matplotlib's Agg backend, one
colour per variant (the baseline first, and within one report the same colour for a variant in every figure), the
figure grid, the legend outside the axes, units and seeds in labels."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import matplotlib

matplotlib.use("Agg")  # files only; never a window, and the same output on every machine

import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from ablations.report.tables import BASELINE, baseline_name  # noqa: E402

# Deterministic SVGs (fixed element ids, no date), so a rebuilt reference report diffs only where data changed.
# Text stays text in the SVGs (searchable, editable).
STYLE = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=0.9),
         "svg.hashsalt": "blockbench", "svg.fonttype": "none"}
PALETTE = "colorblind"
# A marker per batch (or per variant where colour alone would not tell them apart).
MARKERS = ("o", "X", "s", "^", "D", "v")


# The colour-blind palette's colours, the most distinct first: its orange and vermilion (1, 3) and its two pinks (4, 6)
# read as one colour side by side, so the second of each comes only after every distinct hue is used.
DISTINCT_FIRST = (0, 1, 2, 4, 7, 8, 9, 3, 5, 6)


# The variants of the report being drawn, in the order that gives each its colour (``report_colours``).
_REPORT_VARIANTS: ContextVar[tuple[str, ...]] = ContextVar("report_variants", default=())


@contextmanager
def report_colours(variants: Iterable[str]) -> Iterator[None]:
    """Within the block, a variant takes the colour of its place in ``variants`` (the report's, the answer's arms
    first) in every figure, so RMSNorm is one colour from the first figure to the last; a figure whose variants would
    share a colour gives the later one a free colour instead."""
    token = _REPORT_VARIANTS.set(tuple(dict.fromkeys(str(v) for v in variants)))
    try:
        yield
    finally:
        _REPORT_VARIANTS.reset(token)


def palette(cases: list[str]) -> dict[str, tuple]:
    """One colour per variant, the baseline first, stable across a sweep's figures and, inside ``report_colours``,
    across the report's; no two cases of one figure share a colour while the palette has colours left."""
    colours = sns.color_palette(PALETTE, len(DISTINCT_FIRST))
    ordered = [colours[i] for i in DISTINCT_FIRST]
    fixed = {variant: i % len(ordered) for i, variant in enumerate(_REPORT_VARIANTS.get())}
    chosen: dict[str, int] = {}
    for i, case in enumerate(cases):
        want = fixed.get(_variant_of(str(case)), i % len(ordered))
        taken = set(chosen.values())
        if want in taken and len(taken) < len(ordered):
            want = next(c for c in range(len(ordered)) if c not in taken)
        chosen[case] = want
    return {case: ordered[c] for case, c in chosen.items()}


def _variant_of(case: str) -> str:
    """A case's variant: a case is its variant, or the variant with its point in brackets (``gqa2 [1x512]``)."""
    return case.split(" [", 1)[0]


def case_order(frame: pd.DataFrame) -> list[str]:
    """The variants in the order they are drawn and coloured: the baseline first, then as the rows first name them."""
    cases = list(dict.fromkeys(frame["case"]))
    base = baseline_name(frame) if "baseline" in frame else BASELINE
    return sorted(cases, key=lambda case: not case.startswith(base))


def new_figure(ncols: int = 1, width: float = 5.5, height: float = 4.0) -> tuple[Figure, list]:
    """A figure of ``ncols`` panels side by side, each ``width`` x ``height`` inches, and its axes."""
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def place_legend(ax: Axes, handles: list[Line2D] | None = None, title: str | None = None) -> None:
    """The legend outside the axes, where there is one to draw."""
    # Outside the axes: inside, a legend of five variants hides the very lines it names.
    if handles or ax.get_legend() is not None or ax.get_legend_handles_labels()[0]:
        ax.legend(**({"handles": handles, "title": title} if handles else {}), fontsize="small", loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def unit_text(rows: pd.DataFrame) -> str:
    """The unit(s) of ``rows``' values, for an axis label."""
    units = rows["unit"].dropna().unique()
    return ", ".join(map(str, units)) or "unitless"


def seeds_text(rows: pd.DataFrame) -> str:
    """How many seeds ``rows`` hold, and the band drawn over them, for a title."""
    n = rows["seed"].nunique()
    return f"{n} seed{'s' if n != 1 else ''}" + (", band 95% bootstrap CI" if n > 1 else "")
