"""The transfer study (ablations.quality.transfer, +sweep=transfer): its rungs as the issue of scale asks, and its
reading of verdicts across rungs and texts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ablations.config.generated_sweeps import transfer_rungs
from ablations.quality.transfer import cells, consistency_rate, per_choice, trend
from ablations.roofline.work import lm_params, mode_work
from ablations.runner import plan_point
from tests.quality.helpers import composed


def _rung(name: str) -> tuple[float, float]:
    """(tokens per parameter, training FLOPs) of the baseline's quality model at a rung."""
    quality = plan_point(composed(f"train={name}")).quality
    t, q = quality.train, quality.arch
    tokens = t.steps * t.batch * t.context
    flops = mode_work(q, "train", t.batch, t.context, lm_head=True).flops * t.steps
    return tokens / lm_params(q), flops


# The CPU rungs the sweep runs, and the GPU rungs the docs give for train=gpu.
RUNG_SETS = {"cpu": transfer_rungs(), "gpu": ["gpu_rung_s", "gpu_rung_m", "gpu_rung_l"]}


@pytest.mark.parametrize("names", RUNG_SETS.values(), ids=RUNG_SETS)
def test_the_rungs_grow_compute_16x_and_never_lower_tokens_per_parameter(names):
    rungs = [_rung(name) for name in names]
    assert len(rungs) >= 3
    ratios, flops = zip(*rungs, strict=True)
    assert all(b >= a for a, b in zip(ratios, ratios[1:], strict=False)), ratios
    assert all(b > a for a, b in zip(flops, flops[1:], strict=False))
    assert flops[-1] / flops[0] >= 16


def test_the_top_cpu_rung_trains_more_than_the_headline_model():
    """Transfer is tested upward: the top rung's training compute exceeds the default quality model's, and no lower
    rung is larger than the top."""
    headline = _rung("default")[1]
    flops = [_rung(name)[1] for name in RUNG_SETS["cpu"]]
    assert flops[-1] > headline and max(flops) == flops[-1]


def _summary(diffs: dict[tuple[str, str, int], float], verdicts: dict[tuple[str, str, int], str]) -> pd.DataFrame:
    rows = [{"sweep": "transfer", "metric": "val_loss", "variant": v, "reference": "gpt2", "corpus": corpus,
             "d_model": d, "diff": x, "diff_lo": x - 0.01, "diff_hi": x + 0.01, "verdict": verdicts[(v, corpus, d)]}
            for (v, corpus, d), x in diffs.items()]
    rows += [{"sweep": "transfer", "metric": "val_loss", "variant": "gpt2", "reference": "gpt2", "corpus": corpus,
              "d_model": d, "diff": np.nan, "verdict": "baseline"} for corpus in ("a", "b") for d in (32, 64, 96)]
    return pd.DataFrame(rows)


def test_consistency_is_the_top_rungs_sign_matched_below_it():
    diffs, verdicts = {}, {}
    for corpus in ("a", "b"):
        for d, x in ((32, -0.05), (64, -0.04), (96, -0.03)):
            diffs[("swiglu", corpus, d)], verdicts[("swiglu", corpus, d)] = x, "better"
    # rmsnorm's sign flips at the smallest rung of text b only: 3 of its 4 lower cells agree.
    for corpus in ("a", "b"):
        for d, x in ((32, 0.01 if corpus == "b" else -0.002), (64, -0.001), (96, -0.003)):
            diffs[("rmsnorm", corpus, d)], verdicts[("rmsnorm", corpus, d)] = x, "no detectable difference"
    verdicts[("rmsnorm", "b", 96)] = "better"
    cell_table = cells(_summary(diffs, verdicts))
    assert len(cell_table) == 12 and cell_table["top"].sum() == 4
    rate, n = consistency_rate(cell_table)
    assert n == 8 and rate == pytest.approx(7 / 8)
    per = per_choice(cell_table).set_index("variant")
    assert per.loc["swiglu", "consistent"] == "yes"
    assert per.loc["rmsnorm", "consistent"] == "no"  # no difference at five cells, better at one


def test_the_trend_is_a_slope_per_doubling_with_its_interval_and_refuses_bounds():
    rows = []
    for d, compute, k in ((32, 1e9, 1.2), (64, 4e9, 1.44), (96, 16e9, 1.728)):
        for seed, noise in enumerate((-0.01, 0.0, 0.01)):
            rows.append({"variant": "swiglu", "corpus": "a", "d_model": d, "seed": seed, "compute": compute,
                         "log2_k": math.log2(k) + noise, "censored": ""})
    readings = pd.DataFrame(rows)
    text = trend(readings, "swiglu", "a")
    # k grows 1.2x per 4x of compute: sqrt(1.2) per doubling.
    assert text.startswith(f"×{math.sqrt(1.2):.3g} per doubling [")
    readings.loc[0, "censored"] = ">"
    assert trend(readings, "swiglu", "a").startswith("not fitted")


def test_verdict_counts_say_consistent_only_for_one_answered_verdict_everywhere():
    from ablations.quality.transfer import verdict_counts

    cell_table = pd.DataFrame({"variant": ["a"] * 3 + ["b"] * 3 + ["c"] * 2, "corpus": ["x"] * 8,
                      "d_model": [48, 64, 96, 48, 64, 96, 48, 64],
                      "verdict": ["no detectable difference"] * 3 + ["better", "no detectable difference", "better"]
                      + ["budget spent", "budget spent"]})
    counts = verdict_counts(cell_table)
    assert counts["a"] == "consistent: no difference in 3 of 3"
    assert counts["b"] == "better in 2 of 3, no difference in 1"
    assert counts["c"] == "budget spent in 2 of 2"  # the same everywhere, but never answered


def test_the_rung_table_is_what_the_baselines_rows_say_each_rung_trained():
    """Parameters, steps, bytes per parameter and training FLOPs per rung come from the rows, the top rung 1x."""
    from ablations.report.transfer_section import rung_table

    rows = [{"variant": v, "d_model": d, "params": p, "step": s, "batch": 32, "seq_len": 128,
             "train_flops_step": f, "seed": seed}
            for d, p, s, f in ((48, 131_616, 60, 4.2e9), (128, 842_496, 522, 3.0e10))
            for v in ("gpt2", "rope") for seed in (0, 1)]
    table = rung_table(pd.DataFrame(rows))
    assert list(table["rung width"]) == [48, 128] and list(table["steps"]) == [60, 522]
    assert table["bytes per parameter"].tolist() == pytest.approx([60 * 4096 / 131_616, 522 * 4096 / 842_496])
    assert table["× top"].tolist() == pytest.approx([60 * 4.2e9 / (522 * 3.0e10), 1.0])
