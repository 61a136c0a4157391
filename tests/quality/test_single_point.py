"""A single choice is a comparison: ``GROUP=OPTION`` alone trains its baseline's seeds too and reports the paired
difference, with fixed seeds as with seeds until answered (issue: "no baseline in sweep" after a one-point run)."""

from __future__ import annotations

import pandas as pd

from ablations.quality.stats import summarize
from tests.quality.helpers import quality_rows


def test_a_point_run_alone_trains_its_baselines_seeds_and_reports_the_paired_difference():
    status, rows = quality_rows("norm=rmsnorm", "train.steps=6", "train.seeds=[0,1]", baseline=True)
    assert status == "ok"
    table = pd.DataFrame(rows)
    finals = table[(table["metric"] == "val_loss") & (table["mode"] == "final")]
    assert sorted(finals["variant"].unique()) == ["gpt2", "v"]
    assert sorted(finals.loc[finals["variant"] == "gpt2", "seed"]) == [0, 1]
    summary = summarize(table.assign(sweep="norm"))
    row = summary[(summary["variant"] == "v") & (summary["metric"] == "val_loss")].iloc[0]
    assert row["reference"] == "gpt2" and row["diff_n"] == 2
    assert row["verdict"] != "no baseline in sweep"
