"""The training run: the loss falls, a seed repeats exactly, seeds differ, divergence is a row, not a crash."""

from __future__ import annotations

import math

import torch

from ablations.config.schema import TrainConfig
from ablations.quality.data import load_corpus
from ablations.quality.learning_rate import arm_rate, with_rate
from ablations.quality.optimizer import lr_at
from ablations.quality.train import train
from ablations.quality.windows import train_starts
from ablations.runner import plan_point
from tests.quality.helpers import composed, quality_rows


def _train(seed: int, *overrides: str):
    cfg = composed(*overrides)
    torch.set_num_threads(1)
    quality = plan_point(cfg).quality
    tc = with_rate(quality.train, arm_rate(quality.train, "gpt2").lr)  # the arm's own rate, as a point resolves it
    return train(quality.arch, load_corpus(), tc, seed, torch.device("cpu"))


def test_loss_falls_on_the_smoke_profile():
    result = _train(0)
    val = [v for m, _, v in result.curve if m == "val_loss"]
    trained = [v for m, _, v in result.curve if m == "train_loss"]
    assert result.diverged_at is None
    assert abs(val[0] - math.log(256)) < 0.3  # untrained: about uniform over bytes
    assert val[-1] < val[0] - 1.5 and trained[-1] < trained[0]
    assert result.final_val == val[-1]


def test_same_seed_gives_identical_losses_and_other_seeds_differ():
    first, again, other = _train(0, "train.steps=12"), _train(0, "train.steps=12"), _train(1, "train.steps=12")
    assert first.curve == again.curve
    assert [v for *_, v in first.curve] != [v for *_, v in other.curve]


def test_data_order_depends_on_the_seed_only():
    # Every variant of a seed draws the same windows: the starts depend on the seed and the sizes, nothing else.
    assert torch.equal(train_starts(10_000, 32, 5, 4, seed=3), train_starts(10_000, 32, 5, 4, seed=3))
    assert not torch.equal(train_starts(10_000, 32, 5, 4, seed=3), train_starts(10_000, 32, 5, 4, seed=4))


def test_warmup_then_cosine_to_the_floor():
    tc = TrainConfig(name="test", lr=1.0, lr_min_ratio=0.1, warmup=10, steps=110)
    assert lr_at(0, tc) == 0.1 and lr_at(9, tc) == 1.0
    assert math.isclose(lr_at(60, tc), 0.55) and math.isclose(lr_at(110, tc), 0.1)
    assert all(lr_at(s, tc) >= lr_at(s + 1, tc) for s in range(10, 110))


def test_divergence_is_recorded_with_its_step_and_the_point_goes_on():
    status, rows = quality_rows("train.steps=30", "train.lr=1e4", "train.clip=0", "train.warmup=0")
    final = [r for r in rows if r["metric"] == "val_loss" and r["mode"] == "final"]
    assert status == "ok" and len(final) == 1
    row = final[0]
    assert row["status"] == "diverged" and math.isnan(row["value"]) and 0 <= row["step"] < 30
    assert "became" in row["error"]


def test_quality_rows_describe_the_quality_model():
    status, rows = quality_rows("train.steps=6", "train.seeds=[0,1]", "attn=gqa")
    assert status == "ok"
    final = [r for r in rows if r["metric"] == "val_loss" and r["mode"] == "final"]
    assert [r["seed"] for r in final] == [0, 1]
    r = final[0]
    # model=tiny has 4 heads and 2 KV heads (2 per KV head); the smoke quality model has 4 heads: 2 KV heads.
    assert (r["d_model"], r["n_layers"], r["n_heads"], r["n_kv_heads"]) == (64, 2, 4, 2)
    assert r["params"] < r["params_baseline"] and len(r["corpus"]) == 64 and r["dtype"] == "float32"
    metrics = {row["metric"] for row in rows}
    assert {"train_loss", "val_loss", "train_bpb", "val_bpb", "train_tokens_per_s", "train_wall_time",
            "extrap_loss", "loss_by_position"} <= metrics
    assert "2 KV of 4 heads (point: 2 of 4)" in r["note"] and "stdlib" in r["note"]
    bpb = next(row for row in rows if row["metric"] == "val_bpb" and row["mode"] == "final" and row["seed"] == 0)
    assert math.isclose(bpb["value"], r["value"] / math.log(2))
