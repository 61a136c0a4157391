"""Confidence intervals against known values; the summary of a synthetic sweep."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ablations.quality.stats import betainc, mean_ci, paired_difference, summarize, t_quantile, verdict

# Student-t 0.975 quantiles (any table; e.g. scipy.stats.t.ppf(0.975, df)).
T975 = {1: 12.706204736174707, 2: 4.302652729749464, 3: 3.182446305284263, 4: 2.7764451051977934,
        5: 2.5705818356363146, 10: 2.2281388519649385, 30: 2.0422724563012373, 1e6: 1.959966}


@pytest.mark.parametrize("df,expected", T975.items())
def test_t_quantile_matches_the_table(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, rel=1e-6)
    assert t_quantile(0.025, df) == pytest.approx(-expected, rel=1e-6)


def test_incomplete_beta_known_values():
    assert betainc(1, 1, 0.3) == pytest.approx(0.3)  # uniform
    assert betainc(2, 3, 0.4) == pytest.approx(0.5248)  # 1 - (1-x)^4 - 4x(1-x)^3, by hand
    assert t_quantile(0.95, 2) == pytest.approx(2.919985580353725, rel=1e-6)


def test_mean_ci_known_case():
    ci = mean_ci([1.0, 2.0, 3.0])  # mean 2, sd 1, half width t(0.975, 2) / sqrt(3)
    half = 4.302652729749464 / math.sqrt(3)
    assert (ci.mean, ci.std, ci.n) == (2.0, 1.0, 3)
    assert ci.lo == pytest.approx(2 - half) and ci.hi == pytest.approx(2 + half)
    one = mean_ci([5.0])
    assert one.mean == 5.0 and math.isnan(one.lo)


def test_paired_difference_and_verdicts():
    base = {0: 1.0, 1: 2.0, 2: 3.0}
    better = paired_difference({0: 0.9, 1: 1.8, 2: 2.85}, base)  # d = -0.1, -0.2, -0.15: sd 0.05
    assert better.mean == pytest.approx(-0.15) and better.std == pytest.approx(0.05)
    assert better.hi == pytest.approx(-0.15 + 4.302652729749464 * 0.05 / math.sqrt(3))
    assert verdict(better) == "better"
    assert verdict(paired_difference({0: 1.1, 1: 2.2, 2: 3.15}, base)) == "worse"
    assert verdict(paired_difference({0: 1.1, 1: 1.9, 2: 3.0}, base)) == "no detectable difference"
    assert verdict(paired_difference({0: 1.1, 5: 1.9}, base)) == "too few seeds"  # one shared seed


def _rows(sweep, variant, values, pos="learned", norm="layernorm", ffn="gelu", attn="mha", kv=4, **extra):
    return [dict(sweep=sweep, variant=variant, metric="val_loss", mode="final", value=v, seed=s, status="ok",
                 statistic="mean", seq_len=128, pos=pos, norm=norm, ffn=ffn, attn=attn, n_kv_heads=kv, n_heads=4,
                 **extra) for s, v in enumerate(values)]


def test_summarize_a_synthetic_sweep():
    rows = (_rows("all", "gpt2", [1.75, 1.73, 1.76]) + _rows("all", "llama2", [1.37, 1.36, 1.38], "rope-half",
            "rmsnorm", "swiglu", "gqa", 1) + _rows("all", "rmsnorm", [1.751, 1.728, 1.762], norm="rmsnorm"))
    rows.append(dict(rows[0], variant="rope", value=math.nan, status="diverged", statistic="diverged", seed=0))
    rows += [dict(rows[0], metric="extrap_loss", mode="extrapolation", seq_len=256, value=math.nan,
                  statistic="cannot", seed=s) for s in range(3)]
    s = summarize(pd.DataFrame(rows)).set_index(["variant", "metric", "seq_len"])
    gpt2, llama = s.loc[("gpt2", "val_loss", 128)], s.loc[("llama2", "val_loss", 128)]
    assert gpt2["verdict"] == "baseline" and gpt2["n"] == 3
    assert llama["verdict"] == "better" and llama["diff"] == pytest.approx(1.37 - 1.75 + 0.0, abs=0.02)
    assert llama["ci_lo"] < llama["mean"] < llama["ci_hi"]
    assert s.loc[("rmsnorm", "val_loss", 128)]["verdict"] == "no detectable difference"
    rope = s.loc[("rope", "val_loss", 128)]
    assert rope["n"] == 0 and rope["diverged"] == 1 and rope["verdict"] == "too few seeds"
    assert s.loc[("gpt2", "extrap_loss", 256)]["verdict"] == "cannot"


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


def test_extrapolation_is_compared_with_the_baseline_and_with_itself_at_the_training_length():
    def extrap(variant, pos, seq_len, values, statistic="mean"):
        return [dict(r, metric="extrap_loss", mode="extrapolation", seq_len=seq_len, statistic=statistic)
                for r in _rows("pos", variant, values, pos=pos)]
    nan = [math.nan] * 3
    rows = (extrap("gpt2", "learned", 128, [1.75, 1.74, 1.76]) + extrap("gpt2", "learned", 512, nan, "cannot")
            + extrap("rope", "rope-half", 128, [1.70, 1.69, 1.71])
            + extrap("rope", "rope-half", 512, [1.80, 1.80, 1.82]))
    s = summarize(pd.DataFrame(rows)).set_index(["variant", "seq_len", "reference"])["verdict"]
    assert s[("gpt2", 512, "gpt2")] == "cannot"
    assert s[("rope", 512, "gpt2")] == "no comparison: the baseline cannot run at this length"
    assert s[("rope", 512, "rope at 128")] == "worse"  # the longer context raised the loss on the same bytes
    assert s[("rope", 128, "gpt2")] == "better"


def test_the_text_summary_names_each_verdict():
    from ablations.quality.__main__ import report

    rows = _rows("norm", "gpt2", [1.75, 1.73, 1.76]) + _rows("norm", "rmsnorm", [1.70, 1.69, 1.72], norm="rmsnorm")
    rows += [dict(r, metric="train_wall_time", mode="quality", value=60.0) for r in rows]
    text = report(pd.DataFrame(rows))
    assert "## norm: 6 quality runs, 6.0 min of training" in text
    assert "better" in text and "baseline" in text
