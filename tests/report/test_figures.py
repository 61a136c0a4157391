"""The timing figures draw what the paired measurement says, and log axes carry readable labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ablations.report.axes import ReadableLogLocator, plain_number, si_number
from ablations.report.tables import split
from ablations.report.timing_figures import decode_ratio_vs_context, ratio_vs_seq

DRIFT = 1.25  # the rmsnorm point ran on a slower machine: both sides of each of its pairings took 25% longer


def drifted(synthetic) -> pd.DataFrame:
    """A norm sweep whose rmsnorm point is no different from the baseline (every paired ratio 1.0) but whose
    absolute times, its own baseline's included, are all 25% above the gpt2 point's."""
    table = synthetic(ratios={"rmsnorm": (1.0, 1.0, 1.0)}, quality=False, sweeps=("norm",), failed=False)
    absolute = table["metric"].isin(["latency", "baseline_latency", "decode_latency", "decode_baseline_latency"])
    slow = absolute & (table["variant"] == "rmsnorm")
    table.loc[slow, ["value", "lo", "hi"]] *= DRIFT
    return split(table)[0]


def plotted_y(fig) -> np.ndarray:
    """Every y value drawn as a line or marker (error bar caps included), the line at 1 left out."""
    ys = [np.asarray(line.get_ydata(), dtype=float) for ax in fig.axes for line in ax.get_lines()
          if list(line.get_xdata()) != [0, 1]]  # axhline: x in axes coordinates
    return np.concatenate(ys)


def test_drift_between_points_is_not_drawn_as_an_effect(synthetic):
    measured = drifted(synthetic)
    rms = measured[(measured["variant"] == "rmsnorm") & (measured["metric"] == "latency")]
    gpt2 = measured[(measured["variant"] == "gpt2") & (measured["metric"] == "latency")]
    assert rms["value"].median() == pytest.approx(DRIFT * gpt2["value"].median())  # the drift is in the table
    for build in (ratio_vs_seq, decode_ratio_vs_context):
        y = plotted_y(build(measured))
        assert len(y) and ((y > 0.95) & (y < 1.05)).all(), build.__name__  # paired: no difference, 1.0 ± quartiles


def test_a_real_difference_is_drawn_where_the_ratio_is(synthetic):
    measured = split(synthetic(quality=False, sweeps=("kv",), failed=False))[0]
    fig = decode_ratio_vs_context(measured)
    ax = fig.axes[0]
    assert "variant / baseline" in ax.get_ylabel()
    medians = {round(float(np.median(line.get_ydata())), 2) for line in ax.get_lines() if line.get_marker() != "None"}
    assert {1.0, 0.62, 0.55} <= medians  # gpt2 against itself, gqa2, mqa
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"gpt2 (16)", "gqa2 (2)", "mqa (1)", "B=1", "B=4"} <= set(legend)


def test_no_ratio_rows_is_a_line_not_a_figure(synthetic):
    measured = split(synthetic(quality=False, sweeps=("norm",), failed=False))[0]
    timing_only = measured[~measured["metric"].str.contains("ratio")]
    assert "no paired latency ratios" in ratio_vs_seq(timing_only)
    assert "no paired decode timing rows" in decode_ratio_vs_context(timing_only)


def in_view(ticks: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return ticks[(ticks >= lo) & (ticks <= hi)]


@pytest.mark.parametrize("lo,hi", [(0.55, 1.02), (0.97, 1.04), (1.7, 9.5), (2.0, 30.0)])
def test_a_log_axis_narrower_than_a_few_decades_gets_several_ticks(lo, hi):
    ticks = in_view(ReadableLogLocator().tick_values(lo, hi), lo, hi)
    assert len(ticks) >= 3
    labels = [plain_number(t) for t in ticks]
    assert len(set(labels)) == len(labels) and all(len(label) <= 5 for label in labels)  # distinct, short


def test_a_wide_log_axis_is_ticked_one_two_five():
    ticks = in_view(ReadableLogLocator().tick_values(1.5, 900), 1.5, 900)
    assert [plain_number(t) for t in ticks] == ["2", "5", "10", "20", "50", "100", "200", "500"]


def test_plain_numbers_have_no_float_noise():
    assert [plain_number(v) for v in (0.6000000000000001, 1.0, 2.5, 1000.0)] == ["0.6", "1", "2.5", "1000"]


def test_the_drawn_decode_figure_labels_its_narrow_log_axis(synthetic):
    measured = split(synthetic(quality=False, sweeps=("kv",), failed=False))[0]
    fig = decode_ratio_vs_context(measured)  # ratios 0.55 to 1.0: under a decade
    fig.draw_without_rendering()
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    labels = [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)
              if lo <= v <= hi and t.get_text()]
    assert len(labels) >= 3, labels


def test_counts_on_a_log_axis_read_as_k_m_b():
    assert [si_number(v) for v in (500, 200_000, 1_500_000, 7e9, 1e6)] == ["500", "200k", "1.5M", "7B", "1M"]


def test_the_ratio_figures_draw_95_intervals_and_mark_the_aa_floor(synthetic):
    """One notation: every error bar is the ratio's 95% interval (the ``ratio_interval`` rows), never its quartiles,
    and the baseline's own bar is marked as the A/A noise floor, not a result."""
    from ablations.report.comparison import comparison
    from ablations.report.timing_figures import ratio_bars

    table = synthetic(quality=False, sweeps=("norm",), failed=False)
    iv = table["metric"] == "ratio_interval"
    table.loc[iv, "lo"], table.loc[iv, "hi"] = table.loc[iv, "value"] * 0 + 0.5, table.loc[iv, "value"] * 0 + 2.0
    measured = split(table)[0]
    y = plotted_y(ratio_vs_seq(measured))
    assert y.min() == pytest.approx(0.5) and y.max() == pytest.approx(2.0)  # the intervals' ends, not the quartiles
    fig = ratio_bars(comparison(measured))
    ax = fig.axes[0]
    assert "95% interval" in ax.get_title()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert any("gpt2" in t and "A/A noise floor" in t for t in labels)
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert hatched and all(abs(p.get_x() + p.get_width() / 2) < 0.5 for p in hatched)  # the baseline's bars, at x=0


def test_one_outlying_interval_is_clipped_and_marked_not_allowed_to_flatten_the_panel(synthetic):
    table = synthetic(quality=False, sweeps=("norm",), failed=False)
    iv = (table["metric"] == "ratio_interval") & (table["variant"] == "rmsnorm")
    first = table.index[iv][0]
    table.loc[first, "hi"] = 1.65  # the wide one a latency panel met
    fig = ratio_vs_seq(split(table)[0])
    marked = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "1.65" in marked
    assert all(ax.get_ylim()[1] < 1.65 for ax in fig.axes if any(t.get_text() == "1.65" for t in ax.texts))
    assert any("past the axis" in t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts())


def test_a_variant_keeps_its_colour_in_every_figure_of_a_report():
    from ablations.report.figure_style import palette, report_colours

    with report_colours(["gpt2", "rope", "rmsnorm", "swiglu", "gqa2"]):
        alone, among = palette(["gpt2", "rmsnorm"]), palette(["gpt2", "gqa2", "rope", "rmsnorm"])
        assert alone["rmsnorm"] == among["rmsnorm"] and among["gqa2"] == palette(["gqa2"])["gqa2"]
        crowded = palette(["gpt2", *[f"v{i}" for i in range(9)]])
        assert len(set(crowded.values())) == 10  # unknown variants take free colours, never a taken one
    assert palette(["gpt2", "rmsnorm"])["rmsnorm"] != alone["gpt2"]


def test_no_point_of_the_roofline_figure_hides_another():
    """Variants on the same ratio are drawn as concentric markers, the later smaller."""
    from ablations.report.timing_figures import _diagonal

    p = pd.DataFrame({"case": ["c", "b", "a"], "mode": ["train"] * 3, "x": [0.9, 0.9, 0.9], "y": [1.0, 1.0, 1.0]})
    fig = _diagonal(p, "x", "y", "x", "y", "t", order=["a", "b", "c"])  # drawn in the order's sizes, not the rows'

    sizes = [float(s) for coll in fig.axes[0].collections for s in np.atleast_1d(coll.get_sizes())]
    assert len(set(sizes)) == 3 and sorted(sizes, reverse=True) == sizes
