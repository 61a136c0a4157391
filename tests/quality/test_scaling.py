"""Effects across widths: pairing within a width, the slope per decade against a hand fit, and the report's
table and figure for a scale sweep."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from ablations.quality.scaling import effect_trend, paired_differences
from ablations.quality.stats import summarize
from ablations.report.quality_figures import scale_effects
from ablations.report.quality_sections import trend_table

# (variant, d_model) -> (params, final val loss per seed 0, 1, 2)
POINTS = {
    ("gpt2", 64): (100_000, [2.00, 2.02, 1.98]),
    ("gpt2", 128): (1_000_000, [1.80, 1.83, 1.79]),
    ("gpt2", 256): (10_000_000, [1.60, 1.61, 1.62]),
    # llama2 is better by 0.30 at 64, 0.20 at 128, 0.10 at 256 on every seed: +0.10 per decade exactly.
    ("llama2", 64): (100_000, [1.70, 1.72, 1.68]),
    ("llama2", 128): (1_000_000, [1.60, 1.63, 1.59]),
    ("llama2", 256): (10_000_000, [1.50, 1.51, 1.52]),
}


def table(points: dict = POINTS) -> pd.DataFrame:
    return pd.DataFrame([dict(sweep="scale", variant=v, d_model=d, params=p, metric="val_loss", mode="final",
                              value=x, seed=s, status="ok", statistic="mean", seq_len=128, unit="nats/byte",
                              pos="learned", norm="layernorm", ffn="gelu", attn="mha", n_kv_heads=4, n_heads=4,
                              bias=True)
                         for (v, d), (p, xs) in points.items() for s, x in enumerate(xs)])


def test_differences_pair_each_seed_with_the_baseline_of_its_own_width():
    d = paired_differences(table()).set_index(["d_model", "seed"])["diff"]
    assert d.loc[(64, 1)] == pytest.approx(-0.30) and d.loc[(256, 2)] == pytest.approx(-0.10)
    assert len(d) == 9


def test_the_slope_per_decade_is_the_hand_fit():
    t = effect_trend(table()).iloc[0]
    assert (t["variant"], t["widths"], t["n"]) == ("llama2", "64, 128, 256", 9)
    assert t["effect_smallest"] == pytest.approx(-0.30) and t["effect_largest"] == pytest.approx(-0.10)
    assert t["slope_per_decade"] == pytest.approx(0.10)  # (-0.10 - -0.30) over two decades
    assert t["slope_lo"] == pytest.approx(0.10) and t["slope_hi"] == pytest.approx(0.10)  # no scatter about it


def test_the_slope_interval_is_linregress_with_a_t_quantile():
    noisy = {**POINTS, ("llama2", 128): (1_000_000, [1.55, 1.66, 1.60])}
    t = effect_trend(table(noisy)).iloc[0]
    d = paired_differences(table(noisy))
    x, y = np.log10(d["params"].to_numpy(float)), d["diff"].to_numpy(float)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    se = math.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) @ (x - x.mean())))
    assert t["slope_per_decade"] == pytest.approx(slope)
    assert t["slope_hi"] - t["slope_per_decade"] == pytest.approx(2.364624251592785 * se)  # t(0.975, 7)


def test_one_width_gives_no_trend_and_no_figure():
    one = {k: v for k, v in POINTS.items() if k[1] == 128}
    assert effect_trend(table(one)).empty and trend_table(table(one)) is None
    assert "one quality-model width" in scale_effects(summarize(table(one)))


def test_summarize_compares_within_each_width():
    s = summarize(table()).set_index(["variant", "d_model"])
    assert s.loc[("llama2", 64), "diff"] == pytest.approx(-0.30)
    assert s.loc[("llama2", 256), "diff"] == pytest.approx(-0.10)
    assert s.loc[("llama2", 64), "params"] == 100_000 and s.loc[("gpt2", 256), "verdict"] == "baseline"
    assert (s.loc["llama2", "family"] == 3).all()  # one family across the widths


def test_the_report_reads_the_trend_and_draws_effect_against_parameters():
    row = trend_table(table()).iloc[0]
    assert row["reading"] == "the difference narrows with size"  # better by less at larger widths
    assert row["slope per 10× params [95% CI]"].startswith("+0.1000")
    fig = scale_effects(summarize(table()))
    assert isinstance(fig, Figure)
    left, right = fig.axes[:2]
    assert left.get_xscale() == right.get_xscale() == "log"
    assert [t.get_text() for t in right.get_xticklabels() if t.get_text()][:1] != []


def test_the_text_summary_names_each_width():
    from ablations.quality.__main__ import report

    lines = [ln.strip() for ln in report(table()).splitlines()]
    named = [ln.split("  ")[0] for ln in lines if ln.startswith(("gpt2 d=", "llama2 d="))]
    assert named[:6] == ["gpt2 d=64", "gpt2 d=128", "gpt2 d=256", "llama2 d=64", "llama2 d=128", "llama2 d=256"]
