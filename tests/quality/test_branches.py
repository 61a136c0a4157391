"""Warmup-stable-decay and its cool-down branches: a branch is the shorter run itself, bit for bit, not an estimate."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
import torch

import ablations.quality.arms as arms
from ablations.config.schema import TrainConfig
from ablations.quality.arch import check_schedule
from ablations.quality.branches import at_length, check_branches, lengths
from ablations.quality.data import load_corpus
from ablations.quality.learning_rate import arm_rate, with_rate
from ablations.quality.ledger import arm_id
from ablations.quality.optimizer import decay_start, lr_at
from ablations.quality.run import run_quality
from ablations.quality.train import train
from ablations.report.quality_sections import lr_check_table
from ablations.results.rows import Rows
from ablations.runner import plan_point
from components import ArchConfig
from components.config import ConfigError
from tests.quality.helpers import composed

WSD = ("train.schedule=wsd", "train.cooldown=0.25", "train.warmup=2", "train.eval_interval=4", "train.log_interval=2")


def _setup(*overrides: str):
    torch.set_num_threads(1)
    quality = plan_point(composed(*WSD, *overrides)).quality
    return quality.arch, with_rate(quality.train, arm_rate(quality.train, "gpt2").lr)


def test_wsd_holds_the_rate_then_decays_linearly_to_the_floor_over_the_cooldown():
    tc = TrainConfig(name="t", lr=1.0, lr_min_ratio=0.1, warmup=10, steps=100, schedule="wsd", cooldown=0.2)
    assert decay_start(tc) == 80
    assert lr_at(4, tc) == pytest.approx(0.5)
    assert [lr_at(s, tc) for s in (10, 50, 79)] == [1.0, 1.0, 1.0]
    assert lr_at(80, tc) == 1.0 and lr_at(90, tc) == pytest.approx(0.55)
    assert lr_at(99, tc) == pytest.approx(1.0 - 0.9 * 19 / 20)
    # the stable phase of a shorter run is the longer run's, step for step
    short = replace(tc, steps=40)
    assert all(lr_at(s, short) == lr_at(s, tc) for s in range(decay_start(short)))


def test_each_branch_is_the_shorter_run_trained_alone_bit_for_bit():
    arch, tc = _setup("train.steps=16", "train.extrapolation=[1]")
    corpus = load_corpus()
    branches = [at_length(tc, 8), at_length(tc, 12)]
    long = train(arch, corpus, tc, 0, torch.device("cpu"), branches=branches)
    assert long.diverged_at is None and sorted(long.branches) == [8, 12]
    for branch in branches:
        alone = train(arch, corpus, branch, 0, torch.device("cpu"))
        forked = long.branches[branch.steps]
        assert forked.curve == alone.curve  # every train-loss average and validation score, exactly
        assert forked.final_val == alone.final_val
        assert len(forked.step_seconds) == branch.steps and forked.tokens == alone.tokens
        for a, b in zip(forked.lm.parameters(), alone.lm.parameters(), strict=True):
            assert torch.equal(a, b)
    # the long run itself is untouched by its branches
    assert train(arch, corpus, tc, 0, torch.device("cpu")).curve == long.curve


def test_a_budget_runs_ends_only_validation_stays_so_at_every_length():
    tc = TrainConfig(name="t", steps=40, eval_interval=40, schedule="wsd")
    assert at_length(tc, 10).eval_interval == 10
    assert at_length(replace(tc, eval_interval=5), 10).eval_interval == 5
    assert lengths(replace(tc, branch_steps=[10, 80, 10])) == [10, 40, 80]
    assert lengths(replace(tc, schedule="cosine", branch_steps=[10, 80])) == [40]


@pytest.mark.parametrize(("branch", "message"), [
    (TrainConfig(name="t", steps=20, schedule="wsd", lr=4e-3), "differs from its run in lr"),
    (TrainConfig(name="t", steps=40, schedule="wsd"), "not shorter"),
    (TrainConfig(name="t", steps=20, schedule="wsd", average_last=0.5), "averages its weights"),
])
def test_a_branch_that_is_not_one_is_refused_naming_why(branch, message):
    run = TrainConfig(name="t", steps=40, schedule="wsd", average_last=branch.average_last)
    with pytest.raises(ValueError, match=message):
        check_branches(run, [branch])
    with pytest.raises(ValueError, match="schedule=wsd"):
        check_branches(replace(run, schedule="cosine"), [at_length(run, 20)])


POINT = (*WSD, "train.extrapolation=[1]", "train.seeds=[0]", "train.target_mde=null",
         "train.min_seeds=null", "train.max_seeds=null")


def _point(folder, steps: int, branch_steps: str, monkeypatch, budgets: str = "[]",
           *extra: str) -> tuple[list[dict], list[int]]:
    """One point at ``steps`` in the sweep folder ``folder``: its rows and the length of every run it trained."""
    trained: list[int] = []
    real = arms.train

    def counted(q, corpus, tc, seed, *args, **kwargs):
        trained.append(int(tc.steps))
        return real(q, corpus, tc, seed, *args, **kwargs)

    monkeypatch.setattr(arms, "train", counted)
    torch.set_num_threads(1)
    rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0, "point": f"p{steps}"})
    cfg = composed(*POINT, f"train.steps={steps}", f"train.branch_steps={branch_steps}", f"train.budgets={budgets}",
                   "train.check_budgets=[]", *extra)
    assert run_quality(plan_point(cfg).quality, rows, torch.device("cpu"), folder) == "ok"
    return rows.rows, trained


def _finals(rows: list[dict]) -> dict[str, float]:
    return {r["arm"]: r["value"] for r in rows if r["metric"] == "val_loss" and r["mode"] == "final"}


def test_a_sweep_trains_every_length_once_and_each_point_reads_its_own_seed(tmp_path, monkeypatch):
    short, trained = _point(tmp_path / "sweep", 8, "[8,16]", monkeypatch)
    assert trained == [16]  # the shortest point trained the longest run, the other length a branch of it
    long, again = _point(tmp_path / "sweep", 16, "[8,16]", monkeypatch)
    assert again == []  # the longer point found its seed in the ledger
    assert {r["train_steps"] for r in long if r["metric"] == "val_loss"} == {16}
    # each point's seed is the one a run of its own length alone gives, bit for bit
    alone_short, _ = _point(tmp_path / "alone8", 8, "[]", monkeypatch)
    alone_long, _ = _point(tmp_path / "alone16", 16, "[]", monkeypatch)
    assert _finals(short) == _finals(alone_short) and _finals(long) == _finals(alone_long)
    walls = [r for r in long + short if r["metric"] == "train_wall_time"]
    assert any("cool-down branch" in r["note"] for r in walls)


def test_a_wsd_curve_also_trains_the_budgets_of_the_arms_other_lengths(tmp_path, monkeypatch):
    """Two horizons one run apart (8 and 16 steps, branch_steps [8, 16]) with a curve at 0.5x and 2x: the first point
    trains the arm's run and one curve run of 2 x 16 steps, the budgets of both horizons its branches; the second
    point finds every seed it needs in the ledger."""
    first, trained = _point(tmp_path / "sweep", 8, "[8,16]", monkeypatch, "[0.5,2.0]")
    assert trained == [16, 32]
    second, again = _point(tmp_path / "sweep", 16, "[8,16]", monkeypatch, "[0.5,2.0]")
    assert again == []
    losses = [{r["budget"]: r["value"] for r in rows if r["metric"] == "budget_loss"} for rows in (first, second)]
    assert all(set(curve) == {0.5, 2.0} for curve in losses)
    assert len({*losses[0].values(), *losses[1].values()}) == 4  # four lengths: 4, 16 and 8, 32 steps
    for rows, steps in ((first, 8), (second, 16)):  # each budget a multiple of its own point's steps
        assert {r["train_steps"] for r in rows if r["metric"] == "budget_loss"} == {steps}


def test_a_wsd_learning_rate_check_trains_as_the_seed_did_so_the_other_lengths_read_theirs(tmp_path, monkeypatch):
    first, trained = _point(tmp_path / "sweep", 8, "[8,16]", monkeypatch, "[]", "train.lr_check=true")
    assert trained == [16, 16, 16]  # the seed and its two checks, each one run with the 8-step length a branch
    second, again = _point(tmp_path / "sweep", 16, "[8,16]", monkeypatch, "[]", "train.lr_check=true")
    assert again == []
    for rows, steps in ((first, 8), (second, 16)):
        checks = [r for r in rows if r["metric"] == "lr_check_loss"]
        assert len(checks) == 2 and {r["train_steps"] for r in checks} == {steps}
    assert {r["value"] for r in first if r["metric"] == "lr_check_loss"}.isdisjoint(
        r["value"] for r in second if r["metric"] == "lr_check_loss")
    shown = lr_check_table(pd.DataFrame(first + second))  # one row per length, each against its own seed's loss
    assert list(shown["steps"]) == [8, 16] and list(shown.columns[3:6]) == ["lr × 0.5", "lr × 1", "lr × 2"]


def test_wsd_settings_are_checked_at_the_door():
    with pytest.raises(ConfigError, match="train.schedule='linear'"):
        check_schedule(TrainConfig(name="t", schedule="linear"))
    with pytest.raises(ConfigError, match="train.cooldown=0"):
        check_schedule(TrainConfig(name="t", schedule="wsd", cooldown=0))
    with pytest.raises(ConfigError, match="no stable phase"):
        check_schedule(TrainConfig(name="t", schedule="wsd", steps=100, warmup=25, branch_steps=[30]))
    check_schedule(TrainConfig(name="t", schedule="wsd", steps=100, warmup=25, branch_steps=[40, 400]))


def test_branch_steps_and_a_cosine_runs_cooldown_are_no_part_of_a_seeds_identity():
    arch = ArchConfig()
    tc = TrainConfig(name="t")
    assert arm_id(arch, tc, "c") == arm_id(arch, replace(tc, cooldown=0.5), "c")
    assert arm_id(arch, tc, "c") != arm_id(arch, replace(tc, schedule="wsd"), "c")
    wsd = replace(tc, schedule="wsd")
    assert arm_id(arch, wsd, "c") == arm_id(arch, replace(wsd, branch_steps=[10, 20]), "c")
    assert arm_id(arch, wsd, "c") != arm_id(arch, replace(wsd, cooldown=0.5), "c")
