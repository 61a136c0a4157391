"""The quality statistics against scipy and against values worked by hand; Holm's ordering; the minimum
detectable effect; the summary of a synthetic sweep."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ablations.quality.inference import (
    holm,
    mde_note,
    mean_ci,
    minimum_detectable_effect,
    paired_test,
    power,
)
from ablations.quality.stats import summarize, verdict


def t2_quantile(q: float) -> float:
    """Student's t quantile for 2 degrees of freedom in closed form: its CDF is 1/2 + t / (2 sqrt(t^2 + 2))."""
    return (2 * q - 1) / math.sqrt(2 * q * (1 - q))


def test_the_closed_form_is_the_table_value():
    assert t2_quantile(0.975) == pytest.approx(4.302652729749464, rel=1e-12)  # any t table, df = 2


def test_mean_ci_by_hand_and_against_scipy():
    ci = mean_ci([1.0, 2.0, 3.0])  # mean 2, sd 1, half width t(0.975, 2) / sqrt(3)
    half = t2_quantile(0.975) / math.sqrt(3)
    assert (ci.mean, ci.std, ci.n) == (2.0, 1.0, 3)
    assert ci.lo == pytest.approx(2 - half) and ci.hi == pytest.approx(2 + half)
    values = [2.31, 2.25, 2.29, 2.40, 2.27]
    lo, hi = stats.t.interval(0.9, 4, loc=np.mean(values), scale=stats.sem(values))
    assert (mean_ci(values, 0.9).lo, mean_ci(values, 0.9).hi) == pytest.approx((lo, hi))
    one = mean_ci([5.0])
    assert one.mean == 5.0 and math.isnan(one.lo)
    assert math.isnan(mean_ci([]).mean)


BASE = {0: 1.0, 1: 2.0, 2: 3.0}
BETTER = {0: 0.9, 1: 1.8, 2: 2.85}  # d = -0.1, -0.2, -0.15: mean -0.15, sd 0.05, t = -0.15 / (0.05 / sqrt 3)


def test_paired_test_by_hand():
    t = paired_test(BETTER, BASE)
    assert (t.mean, t.sd, t.n) == (pytest.approx(-0.15), pytest.approx(0.05), 3)
    # |t| = 3 sqrt(3), so with df = 2 the two-sided p is 1 - |t| / sqrt(t^2 + 2) = 1 - sqrt(27 / 29).
    assert t.p == pytest.approx(1 - math.sqrt(27 / 29), rel=1e-9)
    lo, hi = t.interval(0.05)
    half = t2_quantile(0.975) * 0.05 / math.sqrt(3)
    assert (lo, hi) == (pytest.approx(-0.15 - half), pytest.approx(-0.15 + half))


def test_paired_test_against_scipy_on_the_shared_seeds_only():
    a = {0: 2.31, 1: 2.25, 2: 2.29, 3: 2.40, 7: 9.9}
    b = {0: 2.30, 1: 2.27, 2: 2.26, 3: 2.35, 5: 0.1}
    t = paired_test(a, b)
    ref = stats.ttest_rel([2.31, 2.25, 2.29, 2.40], [2.30, 2.27, 2.26, 2.35])
    assert t.n == 4 and t.p == pytest.approx(ref.pvalue, rel=1e-12)
    ci = ref.confidence_interval(0.99)
    assert t.interval(0.01) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_the_interval_excludes_zero_exactly_below_p():
    t = paired_test(BETTER, BASE)
    assert t.interval(t.p * 1.001)[1] < 0 < t.interval(t.p * 0.999)[1]


def test_degenerate_paired_tests():
    one = paired_test({0: 1.1, 5: 1.9}, BASE)
    assert one.n == 1 and math.isnan(one.p) and math.isnan(one.interval(0.05)[0])
    same = paired_test(BASE, BASE)
    assert (same.sd, same.p) == (0.0, 1.0)
    shifted = paired_test({s: v + 0.5 for s, v in BASE.items()}, BASE)
    assert shifted.p == 0.0 and shifted.interval(0.05) == (pytest.approx(0.5), pytest.approx(0.5))


def test_verdicts():
    assert verdict(-0.1, 3, 0.01) == "better" and verdict(0.1, 3, 0.01) == "worse"
    assert verdict(0.1, 3, 0.05) == "no detectable difference"  # not below alpha
    assert verdict(0.1, 1, math.nan) == "too few seeds"


# --- Holm-Bonferroni ------------------------------------------------------------------------------------

def test_holm_by_hand():
    # Sorted: 0.005, 0.01, 0.03, 0.04 (m = 4) -> 4 x 0.005, 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04).
    p_holm, level = holm([0.01, 0.04, 0.03, math.nan, 0.005])
    assert p_holm[[4, 0, 2, 1]] == pytest.approx([0.02, 0.03, 0.06, 0.06])
    assert math.isnan(p_holm[3]) and math.isnan(level[3])  # no test: not a member of the family
    # Step levels alpha/4, alpha/3, alpha/2; the last is lowered, its step-down having stopped at 0.03.
    assert level[[4, 0, 2]] == pytest.approx([0.0125, 0.05 / 3, 0.025])
    assert level[1] == pytest.approx(0.05 * 0.04 / 0.06)


def test_holm_is_stricter_than_each_test_and_keeps_the_order():
    p = np.array([0.2, 0.001, 0.04, 0.013, 0.9, 0.011])
    p_holm, _ = holm(p)
    assert (p_holm >= p).all() and (p_holm <= 1).all()
    order = np.argsort(p)
    assert (np.diff(p_holm[order]) >= 0).all()
    assert holm([0.03])[0] == pytest.approx([0.03])  # a family of one is the test itself
    assert (p_holm < 0.05).sum() == 1  # 6 x 0.001 passes; 5 x 0.011 does not, and the step-down stops there


@pytest.mark.parametrize("seed", range(5))
def test_each_test_is_below_its_level_exactly_when_holm_declares_it(seed):
    p = np.random.default_rng(seed).uniform(0, 0.08, size=7)
    p_holm, level = holm(p)
    assert ((p < level) == (p_holm < 0.05)).all()


# --- the minimum detectable effect ----------------------------------------------------------------------

def test_mde_has_80_percent_power_by_the_noncentral_t():
    for n, alpha in ((3, 0.05), (3, 0.01), (2, 0.0125), (10, 0.05)):
        d = minimum_detectable_effect(0.02, n, alpha)
        assert power(d, 0.02, n, alpha) == pytest.approx(0.8, abs=1e-6)
        assert power(0.9 * d, 0.02, n, alpha) < 0.8 < power(1.1 * d, 0.02, n, alpha)


def test_mde_has_80_percent_power_by_simulation():
    sd, n, alpha = 0.03, 3, 0.05
    d = minimum_detectable_effect(sd, n, alpha)
    draws = np.random.default_rng(0).normal(d, sd, size=(40_000, n))
    rejected = stats.ttest_1samp(draws, 0.0, axis=1).pvalue < alpha
    assert rejected.mean() == pytest.approx(0.8, abs=0.01)  # binomial se 0.002


def test_mde_grows_with_the_spread_and_the_level_and_shrinks_with_seeds():
    assert minimum_detectable_effect(0.02, 3, 0.05) == pytest.approx(2 * minimum_detectable_effect(0.01, 3, 0.05))
    by_n = [minimum_detectable_effect(0.01, n, 0.05) for n in (2, 3, 5, 10, 30)]
    assert all(a > b for a, b in zip(by_n, by_n[1:], strict=False))
    assert minimum_detectable_effect(0.01, 3, 0.01) > minimum_detectable_effect(0.01, 3, 0.05)


def test_mde_approaches_the_normal_formula_with_many_seeds():
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)  # 1.960 + 0.842, the large-sample rule
    assert minimum_detectable_effect(1.0, 2000, 0.05) == pytest.approx(z / math.sqrt(2000), rel=2e-3)


def test_no_mde_without_seeds_or_spread():
    assert math.isnan(minimum_detectable_effect(0.01, 1, 0.05)) and "1 shared seed," in mde_note(0.01, 1)
    assert math.isnan(minimum_detectable_effect(0.0, 3, 0.05)) and "sd of the paired differences is 0" in mde_note(
        0.0, 3)
    assert mde_note(0.01, 3) == ""


# --- the summary of a sweep -----------------------------------------------------------------------------

def _rows(sweep, variant, values, pos="learned", norm="layernorm", ffn="gelu", attn="mha", kv=4, bias=True,
          **extra):
    return [dict(sweep=sweep, variant=variant, metric="val_loss", mode="final", value=v, seed=s, status="ok",
                 statistic="mean", seq_len=128, pos=pos, norm=norm, ffn=ffn, attn=attn, n_kv_heads=kv, n_heads=4,
                 bias=bias, **extra) for s, v in enumerate(values)]


def test_summarize_a_synthetic_sweep():
    rows = (_rows("all", "gpt2", [1.75, 1.73, 1.76]) + _rows("all", "llama2", [1.37, 1.36, 1.38], "rope-half",
            "rmsnorm", "swiglu", "gqa", 1) + _rows("all", "rmsnorm", [1.751, 1.728, 1.762], norm="rmsnorm"))
    rows.append(dict(rows[0], variant="rope", value=math.nan, status="diverged", statistic="diverged", seed=0))
    rows += [dict(rows[0], metric="extrap_loss", mode="extrapolation", seq_len=256, value=math.nan,
                  statistic="cannot", seed=s) for s in range(3)]
    s = summarize(pd.DataFrame(rows)).set_index(["variant", "metric", "seq_len"])
    gpt2, llama = s.loc[("gpt2", "val_loss", 128)], s.loc[("llama2", "val_loss", 128)]
    assert gpt2["verdict"] == "baseline" and gpt2["n"] == 3 and math.isnan(gpt2["p"])
    assert llama["verdict"] == "better" and llama["diff"] == pytest.approx(1.37 - 1.75 + 0.0, abs=0.02)
    assert llama["ci_lo"] < llama["mean"] < llama["ci_hi"]
    rms = s.loc[("rmsnorm", "val_loss", 128)]
    assert rms["verdict"] == "no detectable difference" and rms["mde"] > abs(rms["diff"])
    assert llama["family"] == rms["family"] == 2  # the diverged rope has no test, so it is no member
    rope = s.loc[("rope", "val_loss", 128)]
    assert rope["n"] == 0 and rope["diverged"] == 1 and rope["verdict"] == "too few seeds"
    assert "0 shared seeds" in rope["mde_note"]
    assert s.loc[("gpt2", "extrap_loss", 256)]["verdict"] == "cannot"


def test_the_verdict_uses_the_holm_level_and_the_interval_agrees():
    alone = _rows("norm", "gpt2", [1.0, 2.0, 3.0]) + _rows("norm", "rmsnorm", [1.1, 2.2, 3.15], norm="rmsnorm")
    one = summarize(pd.DataFrame(alone)).set_index("variant").loc["rmsnorm"]
    assert one["p"] == pytest.approx(1 - math.sqrt(27 / 29)) and one["p_holm"] == one["p"]  # 0.035: a family of 1
    assert one["verdict"] == "worse" and one["alpha_adjusted"] == 0.05 and one["diff_lo"] > 0
    # Two more comparisons in the sweep, both clearly null: Holm now holds the same test to 0.05 / 3.
    crowd = alone + _rows("norm", "a", [1.3, 1.8, 3.1]) + _rows("norm", "b", [0.8, 2.1, 3.0])
    s = summarize(pd.DataFrame(crowd)).set_index("variant")
    r = s.loc["rmsnorm"]
    assert r["p"] == pytest.approx(one["p"]) and r["p_holm"] == pytest.approx(3 * one["p"])
    assert r["family"] == 3 and r["alpha_adjusted"] == pytest.approx(0.05 / 3)
    assert r["verdict"] == "no detectable difference" and r["diff_lo"] < 0 < r["diff_hi"]
    assert r["diff_hi"] - r["diff_lo"] > one["diff_hi"] - one["diff_lo"]  # the 98.3% interval is the wider
    assert r["mde"] == pytest.approx(minimum_detectable_effect(0.05, 3, 0.05 / 3))


def test_leave_one_out_compares_with_llama2_and_ladder_with_the_rung_below():
    rows = (_rows("leave_one_out", "llama2", [1.36, 1.37, 1.35], "rope-half", "rmsnorm", "swiglu", "gqa", 1)
            + _rows("leave_one_out", "llama2-gelu", [1.40, 1.42, 1.41], "rope-half", "rmsnorm", "gelu", "gqa", 1))
    s = summarize(pd.DataFrame(rows)).set_index("variant")
    assert s.loc["llama2", "verdict"] == "baseline" and s.loc["llama2-gelu", "verdict"] == "worse"
    ladder = (_rows("ladder", "gpt2", [1.75, 1.74, 1.76]) + _rows("ladder", "rmsnorm", [1.70, 1.69, 1.71],
              norm="rmsnorm") + _rows("ladder", "rope+rmsnorm", [1.50, 1.49, 1.52], "rope-half", "rmsnorm"))
    s = summarize(pd.DataFrame(ladder))
    top = s[s.variant == "rope+rmsnorm"].set_index("reference")
    assert set(top.index) == {"gpt2", "rmsnorm"}
    assert top.loc["rmsnorm", "diff"] == pytest.approx(-0.19666, abs=1e-4)
    # Both references of the top rung count, and the first rung's two references are one comparison: 3 in all.
    assert (s.loc[s["p"].notna(), "family"] == 3).all()


def test_extrapolation_is_compared_with_the_baseline_and_with_itself_at_the_training_length():
    def extrap(variant, pos, seq_len, values, statistic="mean"):
        return [dict(r, metric="extrap_loss", mode="extrapolation", seq_len=seq_len, statistic=statistic)
                for r in _rows("pos", variant, values, pos=pos)]
    nan = [math.nan] * 3
    rows = (extrap("gpt2", "learned", 128, [1.75, 1.74, 1.76]) + extrap("gpt2", "learned", 512, nan, "cannot")
            + extrap("rope", "rope-half", 128, [1.70, 1.69, 1.71])
            + extrap("rope", "rope-half", 512, [1.80, 1.80, 1.82]))
    s = summarize(pd.DataFrame(rows)).set_index(["variant", "seq_len", "reference"])
    v = s["verdict"]
    assert v[("gpt2", 512, "gpt2")] == "cannot"
    assert v[("rope", 512, "gpt2")] == "no comparison: the baseline cannot run at this length"
    assert v[("rope", 512, "rope at 128")] == "worse"  # the longer context raised the loss on the same bytes
    assert v[("rope", 128, "gpt2")] == "better"
    assert s.loc[("rope", 512, "rope at 128"), "family"] == 1  # each evaluation length is its own family


def test_the_text_summary_names_each_verdict_and_the_adjustment():
    from ablations.quality.__main__ import report

    rows = _rows("norm", "gpt2", [1.75, 1.73, 1.76]) + _rows("norm", "rmsnorm", [1.70, 1.69, 1.72], norm="rmsnorm")
    rows += _rows("norm", "x", [1.76, 1.72, 1.77])
    rows += [dict(r, metric="train_wall_time", mode="quality", value=60.0) for r in rows]
    text = report(pd.DataFrame(rows))
    assert "## norm: 9 quality runs, 9.0 min of training" in text
    assert "Holm-Bonferroni across the 2 comparisons" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("x "))
    assert "no detectable difference; could have detected |d| >= " in line and "Holm p" in line
    assert "better" in text and "baseline" in text
