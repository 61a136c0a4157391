"""train=gpu: composition, the precision and compile switches, device copies, and its predicted time per seed;
what needs a GPU runs in scripts/cuda_check.sh."""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.config.paths import conf_entry
from ablations.predict.quality_seed import evaluations, run, seed_time
from ablations.quality.compiled import CompiledOrEager, training_forward
from ablations.quality.learning_rate import arm_rate, with_rate
from ablations.quality.ledger import arm_id
from ablations.quality.step_precision import autocast
from ablations.quality.windows import to_device
from ablations.results.identity import NEUTRAL_ARM_SETTINGS
from ablations.roofline.hardware import Hardware
from ablations.runner import plan_point
from components import build_lm
from tests.quality.helpers import composed, quality_rows


def test_the_gpu_profile_is_nanogpts_character_scale_in_bf16_compiled():
    tc = composed("train=gpu").train
    assert (tc.n_layers, tc.d_model, tc.context, tc.batch, tc.steps) == (6, 384, 256, 64, 5000)
    assert tc.precision == "bfloat16" and tc.attention_core == "same" and tc.compile is True
    assert len(plan_run(["train=gpu", "measure=false"])) == 1  # every rule holds for it


def test_autocast_is_bf16_when_asked_and_nothing_otherwise():
    cpu = torch.device("cpu")
    with autocast(composed("train.precision=bfloat16").train, cpu):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    assert isinstance(autocast(composed().train, cpu), contextlib.nullcontext)


def test_an_unknown_precision_is_one_line():
    with pytest.raises(UsageError) as info:
        plan_run(["profile=smoke", "train.precision=float16"])
    assert info.value.message == "train.precision=float16 is not known; allowed: float32, bfloat16, auto"


def test_compile_wraps_the_training_forward_only_when_asked():
    cfg = composed()
    model = build_lm(plan_point(cfg).quality.arch)
    assert training_forward(model, plan_point(cfg).quality.train) is model
    compiled = training_forward(model, plan_point(composed("train.compile=true")).quality.train)
    assert isinstance(compiled, CompiledOrEager) and compiled.lm is model
    assert isinstance(compiled.compiled, torch._dynamo.eval_frame.OptimizedModule)
    assert compiled.compiled._orig_mod is model


def test_a_cpu_copy_is_the_rows_themselves():
    rows = torch.arange(6).reshape(2, 3)
    assert to_device(rows, torch.device("cpu")) is rows  # pinned, non-blocking copies are CUDA's alone


def test_a_bf16_seed_trains_and_its_rows_say_so():
    status, rows = quality_rows("train.precision=bfloat16", "train.steps=6")
    frame = pd.DataFrame(rows)
    assert status == "ok" and set(frame["dtype"]) == {"bfloat16"}
    assert frame.loc[frame["metric"] == "val_loss", "value"].notna().all()


# Arm ids the seed ledgers hold, written before these switches existed (and before the typed configs): a switch at
# its default, or a change of how the settings reach ``arm_id``, must leave every one of them unchanged.
LEDGER_ARMS = {(): "4b9f2cd4f438", ("norm=rmsnorm",): "2e2e55724a94",
               ("attn=gqa", "train.lr_check=true"): "f6f462e5e5f6"}


def test_the_new_switches_at_their_defaults_keep_the_seed_ledgers_arms():
    for overrides, arm in LEDGER_ARMS.items():
        quality = plan_point(composed(*overrides)).quality
        assert {k: getattr(quality.train, k) for k in NEUTRAL_ARM_SETTINGS} == NEUTRAL_ARM_SETTINGS
        # an arm trains at its own rate, resolved before its id is taken: untuned here, the shared rate it had
        trained = with_rate(quality.train, arm_rate(quality.train, "v").lr)
        assert arm_id(quality.arch, trained, "sha") == arm
    bf16 = plan_point(composed("train.precision=bfloat16")).quality
    assert arm_id(bf16.arch, with_rate(bf16.train, bf16.train.shared_lr), "sha") != LEDGER_ARMS[()]


def test_the_predicted_seed_is_its_steps_and_evaluations():
    hw = Hardware.from_dict(OmegaConf.to_container(OmegaConf.load(conf_entry("hardware", "h100_sxm"))))
    cfg = composed("train=gpu")
    q = plan_point(cfg).quality.arch
    full, half = seed_time(q, cfg.train, hw), seed_time(q, composed("train=gpu", "train.steps=2500").train, hw)
    assert full.training == pytest.approx(2 * half.training) and full.seconds > full.training > 0
    assert evaluations(cfg.train) == (1 + 4999 // 250) * 20 + 64  # step 0 and every 250 before 5000, the final
    text = run([])
    assert text.startswith("Predicted (not measured): one quality seed of train=gpu on h100_sxm, bfloat16")
    assert "| gpt2 |" in text and "| llama2 |" in text
