"""The training horizon (ablations.quality.horizon, +sweep=horizon): its horizons as the issue asks, computed from
the config files, and decision accuracy on a constructed case."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ablations.config.generated_sweeps import HORIZON_TRAIN, horizons
from ablations.quality import horizon
from ablations.quality.horizon import settled_horizon
from ablations.quality.transfer import decision_accuracy
from ablations.roofline.work import lm_params
from ablations.runner import plan_point
from tests.quality.helpers import composed


def _horizon(name: str) -> tuple[int, float]:
    """(width, training bytes per parameter) of the GPT-2 baseline's quality model at a horizon."""
    quality = plan_point(composed(f"train={name}", "variant=gpt2")).quality
    t = quality.train
    return t.d_model, t.steps * t.batch * t.context / lm_params(quality.baseline)


def test_the_horizons_span_one_to_forty_bytes_per_parameter_at_one_width():
    """At least four horizons at one width, from about 1 byte per parameter to at least 40 (twice compute-optimal),
    so the headline can be read where k has stopped moving."""
    found = [_horizon(name) for name in horizons()]
    widths, ratios = zip(*found, strict=True)
    assert len(found) >= 4 and len(set(widths)) == 1
    assert all(b > a for a, b in zip(ratios, ratios[1:], strict=False)), ratios
    assert 0.8 <= ratios[0] <= 1.5 and ratios[-1] >= 40, ratios


def test_the_check_budgets_lie_at_the_middle_between_two_knots():
    """Each between-knot budget at the geometric middle of two neighbouring knots, one past 1x and one past 2x; the
    knots half a doubling apart from 1x to 4x."""
    knots = sorted({1.0, *composed("train=horizon_s").train.budgets})
    assert [b / a for a, b in zip(knots[1:], knots[2:], strict=False)] == pytest.approx([2**0.5] * 4)
    checks = HORIZON_TRAIN["check_budgets"]
    for check in checks:
        assert check not in knots and knots[0] < check < knots[-1]
        below, above = max(k for k in knots if k < check), min(k for k in knots if k > check)
        assert check == pytest.approx(math.sqrt(below * above))
    assert any(1 < check < 2 for check in checks) and any(2 < check < 4 for check in checks)


def _finals(means: dict[int, dict[str, float]], noise: dict[int, float], seeds: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for scale, arms in means.items():
        for seed in range(seeds):
            shared = rng.normal(0, 0.05)  # the seed's data luck, shared by its arms
            for arm, mean in arms.items():
                rows.append({"train_steps": scale, "variant": arm, "seed": seed,
                             "value": mean + shared + rng.normal(0, noise[scale])})
    return pd.DataFrame(rows)


def test_decision_accuracy_counts_pairs_ordered_as_at_the_top_and_null_pairs_apart():
    """Three arms: at the top a < b by a clear margin and b, c indistinguishable (a null pair). The short horizon
    orders a < c < b: it agrees on (a, b) and (a, c), not on (b, c), the null pair."""
    top = {"a": 1.00, "b": 1.20, "c": 1.2001}
    short = {"a": 2.00, "b": 2.30, "c": 2.10}
    d = decision_accuracy(_finals({100: short, 400: top}, {100: 0.001, 400: 0.01}), "train_steps")
    row = d.set_index("train_steps").loc[100]
    assert row["pairs"] == 3 and row["ordered as at the top"] == 2
    assert row["decision accuracy"] == pytest.approx(2 / 3)
    assert row["null at the top"] == 1 and row["accuracy without them"] == pytest.approx(1.0)


def test_bytes_per_parameter_comes_from_the_baselines_rows():
    rows = pd.DataFrame([{"sweep": horizon.SWEEP, "metric": "val_loss", "mode": "final", "status": "ok",
                          "variant": v, "baseline": "gpt2", "train_steps": steps, "step": steps, "batch": 32,
                          "seq_len": 128, "params": 4096 if v == "gpt2" else 1, "value": 1.0, "seed": 0}
                         for steps in (10, 40) for v in ("gpt2", "rope")])
    assert horizon.bytes_per_param(rows).to_dict() == {10: 10.0, 40: 40.0}  # steps x 32 x 128 bytes / 4096


def test_the_quality_summary_lists_each_variants_horizons_together_and_names_them():
    """``blockbench quality`` on the horizon reference: each row names its steps, a variant's horizons together."""
    from pathlib import Path

    from ablations.quality.__main__ import report
    from ablations.report.tables import load_table

    table = load_table(Path(__file__).resolve().parents[2] / "results" / "reference" / "horizon")
    table = table[table["variant"].isin(["gpt2", "rope"]) & (table["metric"] == "val_loss")]
    names = [" ".join(line.split()[:3]) for line in report(table).splitlines() if line.startswith("  ")]
    assert names == [f"{v} {n} steps" for v in ("gpt2", "rope") for n in (55, 165, 440, 1100)]


def _worth(ks: dict[str, list[float]], half: float = 0.1) -> pd.DataFrame:
    """A worth frame of the horizon sweep: each choice's k at horizons of 100, 200, 400 steps, the interval ±half."""
    rows = [dict(sweep="horizon", expected=np.nan, variant=v, train_steps=steps, k_flops=k, k_flops_lo=k - half,
                 k_flops_hi=k + half) for v, seq in ks.items() for steps, k in zip((100, 200, 400), seq, strict=True)]
    return pd.DataFrame(rows)


BPP = pd.Series({100: 2.0, 200: 4.0, 400: 8.0})


def test_the_headline_horizon_is_the_shortest_whose_k_lies_in_the_longests_interval_for_every_choice():
    settled = settled_horizon(_worth({"rope": [1.3, 1.95, 2.0], "swiglu": [1.0, 1.12, 1.1]}), BPP)
    assert settled.steps == 200 and settled.bytes_per_param == 4.0 and not settled.longest
    assert settled.ranges == {"rope": (1.3, 2.0), "swiglu": (1.0, 1.12)}
    # one choice still moving at the middle horizon: only the longest holds every k
    moving = settled_horizon(_worth({"rope": [1.3, 1.95, 2.0], "swiglu": [1.0, 1.3, 1.5]}), BPP)
    assert moving.steps == 400 and moving.longest and "so the longest's" in moving.line()
    assert "k has not stopped moving" in moving.line() and "k has not" not in settled.line()


def test_no_headline_horizon_without_an_interval_at_the_longest():
    w = _worth({"rope": [1.3, 1.95, 2.0]})
    w.loc[w["train_steps"] == 400, "k_flops_hi"] = np.nan
    assert settled_horizon(w, BPP) is None


def test_a_sweep_of_one_length_has_no_headline_horizon():
    """With one length there is no shorter horizon to say whether k still moves, so none is named (a full-schedule
    run at the length another sweep chose is read as it is)."""
    w = _worth({"rope": [1.3, 1.95, 2.0]})
    one = w[w["train_steps"] == 400]
    assert settled_horizon(one, BPP[[400]]) is None
    assert settled_horizon(w, BPP) is not None
