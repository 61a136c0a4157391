"""Reruns that repeat: ``train.deterministic`` makes the compiled step's reruns bit-identical (its reductions split over
threads otherwise sum in whichever order the threads finish), and a seed's ledger identity says when it matters."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from ablations.config.schema import TrainConfig
from ablations.quality.ledger import arm_id
from ablations.quality.precision import missing_compiler
from ablations.quality.run import run_quality
from ablations.quality.train_step import deterministic_algorithms
from ablations.results.rows import Rows
from ablations.runner import plan_point
from tests.quality.helpers import composed


def test_a_compiled_deterministic_step_reruns_two_seeds_bit_for_bit_on_two_threads():
    if missing_compiler(torch.device("cpu")):
        pytest.skip(missing_compiler(torch.device("cpu")))
    short = ("train.steps=6", "train.warmup=1", "train.eval_interval=6", "train.log_interval=1",
             "train.extrapolation=[1]", "train.budgets=[]", "train.seeds=[0,1]", "train.target_mde=null",
             "train.min_seeds=null", "train.max_seeds=null", "train.compile=true", "train.precision=bfloat16",
             "train.attention_core=float32", "train.deterministic=true")

    def losses() -> list[tuple[int, float]]:
        threads = torch.get_num_threads()
        torch.set_num_threads(2)  # one thread sums in one order whatever the setting: the test needs two
        try:
            rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0, "point": "p"})
            assert run_quality(plan_point(composed(*short)).quality, rows, torch.device("cpu")) == "ok"
        finally:
            torch.set_num_threads(threads)
        return sorted((r["seed"], r.get("step"), r["value"]) for r in rows.rows
                      if r["metric"] in ("val_loss", "train_loss"))

    first, again = losses(), losses()
    assert first and first == again  # exactly equal, every logged step of both seeds


def test_deterministic_is_part_of_a_compiled_seeds_identity_and_not_of_an_eager_one():
    from components import ArchConfig

    arch = ArchConfig()
    eager, compiled = TrainConfig(name="t", compile=False), TrainConfig(name="t", compile=True)
    assert arm_id(arch, eager, "c") == arm_id(arch, replace(eager, deterministic=True), "c")
    assert arm_id(arch, compiled, "c") != arm_id(arch, replace(compiled, deterministic=True), "c")


def test_the_setting_is_restored_after_training():
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic_algorithms(not before):
        assert torch.are_deterministic_algorithms_enabled() == (not before)
    assert torch.are_deterministic_algorithms_enabled() == before
