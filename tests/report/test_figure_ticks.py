"""Every figure kind, drawn at the report's figure size from the committed reference tables, has readable ticks: no two
tick labels of one axis overlap, and a log axis reads as plain numbers (0.6, 1, 1.5), never ``6×10⁻¹``.

The tables are ``results/reference/results.csv`` (every sweep the report draws, the scale sweep included) and
``results/reference/roofline/results.csv`` (a norm sweep with roofline rows): real data, fixed, so the
test is deterministic. Each figure is built under the report's style and its canvas drawn (constrained layout
included), as ``figures.draw_all`` does before saving it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from ablations.quality.worth import worth
from ablations.report import figures
from ablations.report.comparison import comparison
from ablations.report.figure_style import STYLE
from ablations.report.quality_sections import summarize_quality
from ablations.report.roofline import calibration
from ablations.report.tables import load_table, split
from ablations.results.report_inputs import read_report_inputs

REPO = Path(__file__).resolve().parents[2]
TABLES = {"reference": REPO / "results" / "reference", "roofline": REPO / "results" / "reference" / "roofline",
          "multiplier": REPO / "results" / "reference" / "multiplier",
          "horizon": REPO / "results" / "reference" / "horizon", "lr_scan": REPO / "results" / "reference" / "lr_scan"}
# The reference table's kv rows are the roofline table's kv run: drawn once.
SAME = {("roofline", "kv")}
# What matplotlib's own log formatters write: mathtext powers of ten (``$\mathdefault{6\times10^{-1}}$``).
MATHTEXT = re.compile(r"\$|10\^|\\times|×\s*10|10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]")


@cache
def frames(table: str) -> dict[str, pd.DataFrame]:
    """The frames ``build_report`` hands ``draw_all``, by a figure kind's ``source``."""
    t = load_table(TABLES[table])
    measured, quality, _ = split(t)
    summary = summarize_quality(t)[0] if not quality.empty else None
    return {"measured": measured, "quality": quality, "cmp": comparison(measured),
            "summary": summary if summary is not None else pd.DataFrame(), "worth": worth(t)}


# What a figure kind's frame needs of a sweep: timing ratios, or training runs.
NEEDS = {"measured": {"latency_ratio", "decode_latency_ratio"}, "cmp": {"latency_ratio", "decode_latency_ratio"},
         "quality": {"val_loss"}, "summary": {"val_loss"}, "worth": {"budget_loss"}, "lr-scan": {"lr_scan_loss"}}


def cases() -> list[tuple[str, str, str]]:
    """(table, sweep, figure kind) for every sweep of each table with the rows that kind draws from."""
    out = []
    for table, folder in TABLES.items():
        rows = pd.read_csv(folder / "results.csv", usecols=["sweep", "metric"])
        for sweep, metrics in rows.groupby("sweep", sort=False)["metric"]:
            if (table, sweep) not in SAME:
                out += [(table, str(sweep), k.stem) for k in figures.FIGURES
                        if NEEDS.get(k.stem, NEEDS[k.source]) & set(metrics)]
    return out


CASES = cases()
# Drawn, not skipped with a line: every kind at least once (the scale figure needs the scale sweep's widths).
# The multiplier's figures need a baseline's budget curve: the multiplier reference (a norm sweep with train.budgets);
# the multiplier against training length needs several horizons: the horizon reference; loss against rate, a scan.
DRAWN = {("horizon", "horizon", k.stem) if k.stem == "k-vs-horizon" else
         ("lr_scan", "lr_scan", k.stem) if k.stem == "lr-scan" else
         ("multiplier", "norm", k.stem) if k.source == "worth" else
         ("reference", "scale" if k.stem == "scale" else "all", k.stem) for k in figures.FIGURES}


def build(table: str, sweep: str, stem: str) -> Figure | str:
    kind = next(k for k in figures.FIGURES if k.stem == stem)
    frame = frames(table)[kind.source]
    data = frame[frame["sweep"] == sweep] if not frame.empty else frame
    if data.empty:
        return figures.ABSENT[kind.source]
    with matplotlib.rc_context(STYLE):
        fig = kind.build(data, *((calibration(read_report_inputs([TABLES[table]])),) if kind.calibrated else ()))
        if isinstance(fig, Figure):
            FigureCanvasAgg(fig).draw()  # lays it out (constrained) and places every tick label, at the saved size
    return fig


def shown_labels(axis: Axis) -> list[Text]:
    """The tick labels the axis draws: visible, with text, at a tick inside the view (major and minor)."""
    lo, hi = sorted(axis.get_transform().transform(list(axis.get_view_interval())))
    slack = 1e-9 * max(abs(hi - lo), 1.0)
    out = []
    for tick in [*axis.get_major_ticks(len(axis.get_majorticklocs())),
                 *axis.get_minor_ticks(len(axis.get_minorticklocs()))]:
        if not lo - slack <= axis.get_transform().transform(tick.get_loc()) <= hi + slack:
            continue
        out += [label for label in (tick.label1, tick.label2) if label.get_visible() and label.get_text().strip()]
    return out


def overlaps(labels: list[Text], renderer: object) -> list[tuple[str, str]]:
    boxes = [(label.get_text(), label.get_window_extent(renderer)) for label in labels]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]


# The default tier draws each kind once (DRAWN); the extended tier every sweep of each table, whose figures change
# only when the builders or the committed tables do.
@pytest.mark.parametrize("table,sweep,stem", [
    pytest.param(*case, id="-".join(case), marks=[] if case in DRAWN else [pytest.mark.extended]) for case in CASES])
def test_tick_labels_do_not_overlap_and_log_axes_read_as_plain_numbers(table, sweep, stem):
    fig = build(table, sweep, stem)
    if isinstance(fig, str):  # nothing to draw (a roofline figure without roofline rows, one width): no ticks
        assert (table, sweep, stem) not in DRAWN, fig
        return
    renderer = fig.canvas.get_renderer()
    problems = []
    for n, ax in enumerate(fig.axes):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = shown_labels(axis)
            where = f"axes {n} ({ax.get_title() or ax.get_ylabel()!r}) {name}"
            problems += [f"{where}: {a!r} overlaps {b!r}" for a, b in overlaps(labels, renderer)]
            if axis.get_scale() == "log":
                problems += [f"{where}: log axis label {label.get_text()!r} is not a plain number"
                             for label in labels if MATHTEXT.search(label.get_text())]
    assert not problems, f"{sweep}-{stem}:\n" + "\n".join(problems)


def test_every_figure_kind_is_checked():
    assert DRAWN <= set(CASES)
