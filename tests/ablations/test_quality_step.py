"""The quality model's training step timed paired (ablations.measure.quality_step): its rows, and that what it times is
the quality run's own training step. No wall-clock bound: only what the rows must hold whatever the machine."""

from __future__ import annotations

import math

import pytest
import torch

from ablations import runner
from ablations.measure import quality_step as qs
from ablations.measure.step_split import SPLIT_CALLS
from ablations.quality import train as train_module
from ablations.quality import train_step
from ablations.quality.data import load_corpus
from ablations.quality.learning_rate import arm_rate, with_rate
from ablations.results.rows import Rows
from ablations.results.store import collect
from ablations.runner import plan_point
from tests.ablations.jobs import job_config
from tests.quality.helpers import composed

CPU = torch.device("cpu")


def _measured(monkeypatch: pytest.MonkeyPatch, *overrides: str) -> tuple[object, list[dict], dict]:
    """``measure_quality_step`` at the smoke sizes under ``overrides``: (cfg, rows, what it timed), where what it
    timed is both arms and how many times the timing called each."""
    cfg = composed(*overrides)
    torch.set_num_threads(1)
    timed: dict = {}
    real = qs.paired_with

    def spy(rule, fn_a, fn_b, **kw):
        calls = [0, 0]

        def counted(i, fn):
            def call():
                calls[i] += 1
                return fn()
            return call

        timed.update(a=fn_a, b=fn_b, calls=calls, rule=rule)
        return real(rule, counted(0, fn_a), counted(1, fn_b), **kw)

    monkeypatch.setattr(qs, "paired_with", spy)
    rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0})
    plan = plan_point(cfg)
    qs.measure_quality_step(plan.timing, plan.quality, rows)
    return cfg, rows.rows, timed


@pytest.mark.parametrize("overrides", [("norm=rmsnorm",), ()], ids=["rmsnorm-vs-gpt2", "gpt2-vs-itself"])
def test_the_rows_are_the_paired_ratio_at_the_training_shape(monkeypatch, overrides):
    cfg, rows, _ = _measured(monkeypatch, *overrides)
    tc = cfg.train
    by = {r["metric"]: r for r in rows}
    assert {"quality_step_latency_ratio", "quality_step_ratio_interval", "quality_step_latency",
            "quality_step_baseline_latency", "quality_step_throughput", "phase_seconds"} <= set(by)
    for r in rows:
        assert r["mode"] == "quality_step" and (r["batch"], r["seq_len"]) == (tc.batch, tc.context), r
        assert r["status"] == "ok"
    ratio, iv = by["quality_step_latency_ratio"], by["quality_step_ratio_interval"]
    assert math.isfinite(ratio["value"]) and ratio["value"] > 0
    assert ratio["lo"] <= ratio["value"] <= ratio["hi"]
    assert iv["lo"] <= ratio["value"] <= iv["hi"] and iv["n"] == cfg.profile.rounds
    for metric in ("quality_step_latency", "quality_step_baseline_latency", "quality_step_throughput"):
        assert math.isfinite(by[metric]["value"]) and by[metric]["value"] > 0
    assert by["phase_seconds"]["value"] >= 0 and by["phase_seconds"]["unit"] == "s"


def test_the_timed_calls_are_optimizer_steps_of_the_two_quality_models(monkeypatch):
    cfg, _, timed = _measured(monkeypatch, "norm=rmsnorm")
    quality = plan_point(cfg).quality
    a, b = timed["a"], timed["b"]
    # The variant's and the baseline's quality model, on one shared batch of train.batch x (train.context + 1) ids.
    assert a.arch == quality.arch and b.arch == quality.baseline
    assert a.arch.norm.name == "rmsnorm" and b.arch.norm.name == "layernorm"
    assert a.w is b.w and tuple(a.w.shape) == (cfg.train.batch, cfg.train.context + 1)
    assert a.w.dtype == torch.int64 and 0 <= int(a.w.min()) and int(a.w.max()) < a.arch.model.vocab_size
    # Every timed call was one AdamW step: the optimizer's own count is the first (untimed) call plus the timing's,
    # and for the variant the steps its split profiled.
    for arm, calls, profiled in zip((a, b), timed["calls"], (SPLIT_CALLS, 0), strict=True):
        assert calls >= cfg.profile.rounds + 1  # at least the warm-up and a call a round
        counts = {int(s["step"]) for s in arm.opt.state.values()}
        assert counts == {1 + calls + profiled}
        fresh = qs.QualityStep(arm.arch, quality.train, int(cfg.seed), arm.w, CPU)
        moved = [not torch.equal(p, q) for p, q in zip(arm.lm.parameters(), fresh.lm.parameters(), strict=True)]
        assert all(moved)
        assert all(torch.isfinite(p).all() for p in arm.lm.parameters())


def test_the_step_is_the_one_train_runs(monkeypatch):
    # train() steps through training_step, the very function every timed call runs (the timed arm is train_step's
    # TimedStep): one call per training step.
    assert qs.QualityStep is train_step.TimedStep
    calls = []
    real = train_step.training_step

    def counted(*args, **kw):
        calls.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(train_step, "training_step", counted)
    cfg = composed("train.steps=3", "train.warmup=1", "train.eval_interval=3")
    torch.set_num_threads(1)
    quality = plan_point(cfg).quality
    tc = with_rate(quality.train, arm_rate(quality.train, "gpt2").lr)  # the arm's own rate, as a point resolves it
    result = train_module.train(quality.arch, load_corpus(), tc, 0, CPU)
    assert len(calls) == 3 and all(m is result.lm for m in calls)
    step = qs.quality_steps(plan_point(cfg).quality, CPU)[0]
    loss = step()
    assert math.isfinite(loss) and len(calls) == 4 and calls[-1] is step.lm


def test_a_loss_that_is_not_finite_stops_the_measurement():
    cfg = composed()
    step = qs.quality_steps(plan_point(cfg).quality, CPU)[0]
    with torch.no_grad():
        next(step.lm.parameters()).fill_(math.nan)
    with pytest.raises(FloatingPointError, match="quality model"):
        step()


@pytest.mark.parametrize("overrides,runs", [
    (("train.enabled=true",), True),
    (("train.enabled=true", "profile.quality_step=false"), False),
    (("train.enabled=true", "allow_parallel_timing=false", "hydra/launcher=joblib"), False),
    (("train.enabled=false",), False),
], ids=["trains-and-timed", "profile-off", "untimed-launcher", "no-training"])
def test_a_point_times_the_quality_step_where_it_trains_and_is_timed(tmp_path, as_job, monkeypatch, overrides, runs):
    # The measurement and the quality runs are stubbed: this is the runner's decision only.
    called = []
    monkeypatch.setattr(runner, "measure_point", lambda *a, **k: None)
    monkeypatch.setattr(runner, "measure_quality_step", lambda timing, quality, rows: (
        called.append(quality.arch), rows.add("quality_step_latency_ratio", 1.0, "x", mode="quality_step")))
    monkeypatch.setattr("ablations.quality.run.run_quality", lambda *a, **k: "ok")
    cfg = job_config(tmp_path, *overrides)
    as_job(cfg)
    assert runner.run_job(cfg) == "ok"
    assert len(called) == int(runs)
    table = collect(tmp_path)
    assert (table["metric"] == "quality_step_latency_ratio").any() == runs


def test_under_train_compile_the_first_step_is_timed_apart(monkeypatch):
    # The compiled forward is training_forward's; torch.compile is stood in for (its minutes are not this test's).
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda model: compiled.append(model) or model)
    _, rows, timed = _measured(monkeypatch, "train.compile=true", "train.precision=bfloat16")
    assert compiled == [timed["a"].lm, timed["b"].lm]
    first = [r for r in rows if r["metric"] == "first_call_time"]
    assert len(first) == 1 and first[0]["mode"] == "quality_step" and first[0]["value"] > 0
    assert any(r["metric"] == "quality_step_latency_ratio" for r in rows)
