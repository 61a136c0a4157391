"""The training step's precision, attention core and compilation (ablations.quality.precision): auto chooses by
measurement (simulated here, so each branch is taken on any machine), every row says what ran and why, a compile
that fails trains eagerly with one line, and a bf16 run's losses stay within the stated tolerance of float32's."""

from __future__ import annotations

import logging
from dataclasses import replace

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.quality import precision
from ablations.quality.compiled import CompiledOrEager
from ablations.quality.step_precision import autocast
from ablations.runner import plan_point
from components import build_lm
from components.feedforward import gelu_tanh
from components.kernels import attend, core_dtype
from tests.quality.helpers import composed, quality_rows

CPU = torch.device("cpu")
# A bf16 smoke run's final loss against float32's, same seed and bytes (nats/byte): bf16 rounds every product's
# inputs to 8 bits of mantissa, so 40 steps drift apart by rounding alone; a real error (a wrong cast, a core in the
# wrong dtype) moves the loss by far more. docs/quality.md states the same tolerance.
BF16_SMOKE_TOLERANCE = 0.05


def _train(*overrides: str):
    return plan_point(composed(*overrides)).quality.train


def _rates(monkeypatch: pytest.MonkeyPatch, bf16_gain: float) -> None:
    """Matrix products ``bf16_gain`` x faster in bf16 than in float32, whatever this CPU does."""
    monkeypatch.setattr(precision, "matmul_rate", lambda device, dtype, *shape: 1e11 * (
        bf16_gain if dtype == "bfloat16" else 1.0))


def test_auto_keeps_float32_where_bf16_products_are_not_faster(monkeypatch):
    _rates(monkeypatch, 0.9)  # a CPU that emulates bf16
    tc = _train("train.precision=auto", "train.attention_core=auto")
    choice = precision.resolve(tc, plan_point(composed()).quality.baseline, CPU, 40)
    assert (choice.train.precision, choice.train.attention_core, choice.train.compile) == ("float32", "same", False)
    assert "bf16 products 0.90x float32's" in choice.why and "below 1.25x" in choice.why
    assert choice.why.startswith("float32, attention core float32, eager: ")


def test_auto_takes_bf16_where_products_are_faster_and_the_faster_core(monkeypatch):
    _rates(monkeypatch, 6.0)
    times = {"same": 0.024, "float32": 0.007}  # SDPA's bf16 backward slower, as on this CPU
    monkeypatch.setattr(precision, "_core_seconds", lambda device, shape, core: times[core])
    tc = _train("train.precision=auto", "train.attention_core=auto")
    choice = precision.resolve(tc, plan_point(composed()).quality.baseline, CPU, 40)
    assert (choice.train.precision, choice.train.attention_core) == ("bfloat16", "float32")
    times.update(same=0.005)  # where bf16's core is the faster one, it runs in bf16
    choice = precision.resolve(tc, plan_point(composed()).quality.baseline, CPU, 40)
    assert choice.train.attention_core == "same" and "attention core bfloat16" in choice.why


def test_compile_auto_weighs_the_measured_saving_against_the_compile(monkeypatch):
    monkeypatch.setattr(precision, "missing_compiler", lambda device: "")
    monkeypatch.setattr(precision, "_compile_probe", lambda tc, arch, device: (0.100, 0.080, 4.0, ""))
    tc = _train("train.compile=auto")
    base = plan_point(composed()).quality.baseline
    assert precision.resolve(tc, base, CPU, 100).train.compile is False  # saves 2 s, costs 4 s
    chosen = precision.resolve(tc, base, CPU, 1000)  # saves 20 s
    assert chosen.train.compile is True and "compile 4 s against 1000 planned steps" in chosen.why


def test_compile_auto_without_a_compiler_trains_eagerly_and_says_why(monkeypatch):
    monkeypatch.setattr(precision.shutil, "which", lambda name: None)
    choice = precision.resolve(_train("train.compile=auto"), plan_point(composed()).quality.baseline, CPU, 10**6)
    assert choice.train.compile is False and "eager: no C++ compiler" in choice.why


def test_planned_steps_count_the_first_look_and_the_baselines_curve():
    tc = plan_point(composed("train=default")).quality.train
    # 3 seeds at the first look, and the curve's budgets on 3 of them
    assert precision.planned_steps(tc) == round(250 * (3 + 3 * sum(tc.budgets)))
    assert precision.planned_steps(replace(tc, budgets=[])) == 750


def test_a_compile_that_fails_trains_eagerly_with_one_line(monkeypatch, caplog):
    def broken(model):
        def call(tokens):
            raise RuntimeError("InductorError: C++ compile error\nno such file: g++\n  long trace ...")
        return call

    monkeypatch.setattr(torch, "compile", broken)
    monkeypatch.setattr(CompiledOrEager, "broken", "")
    model = build_lm(plan_point(composed()).quality.arch)
    forward = CompiledOrEager(model)
    tokens = torch.randint(256, (2, 8))
    with caplog.at_level(logging.WARNING, logger="ablations"):
        out = forward(tokens)
        again = forward(tokens)
    assert torch.equal(out, model(tokens)) and torch.equal(again, out)
    warned = [r.getMessage() for r in caplog.records]
    assert warned == ["torch.compile failed (RuntimeError: InductorError: C++ compile error): training eagerly"]
    # The failure holds for the process: the next model goes eager without another try or line.
    caplog.clear()
    later = CompiledOrEager(model)
    assert later.failed and later.compiled is model and torch.equal(later(tokens), out) and not caplog.records


def test_a_seed_whose_compile_failed_says_it_trained_eagerly(monkeypatch):
    monkeypatch.setattr(CompiledOrEager, "broken", "")
    monkeypatch.setattr(torch, "compile", lambda model: lambda tokens: (_ for _ in ()).throw(RuntimeError("no g++")))
    status, rows = quality_rows("train.compile=true", "train.steps=6")
    frame = pd.DataFrame(rows)
    assert status == "ok" and frame["compile"].isna().all()
    assert frame["step_choice"].str.endswith("compile failed, trained eagerly: RuntimeError: no g++").all()
    assert "compile_time" not in set(frame["metric"])


def test_the_settings_are_refused_in_one_line():
    for bad, line in (("train.precision=float16", "train.precision=float16 is not known; allowed: float32, "
                       "bfloat16, auto"),
                      ("train.attention_core=half", "train.attention_core=half is not known; allowed: same, "
                       "float32, auto"),
                      ("train.compile=sometimes", "train.compile='sometimes' is not known; allowed: true, false, "
                       "auto")):
        with pytest.raises(UsageError) as info:
            plan_run(["profile=smoke", bad])
        assert info.value.message == line


def test_an_unresolved_auto_never_reaches_the_step():
    with pytest.raises(ValueError, match="unresolved"):
        autocast(_train("train.precision=auto"), CPU)


def test_every_quality_row_says_how_its_step_ran():
    status, rows = quality_rows("train.precision=bfloat16", "train.attention_core=float32", "train.steps=6")
    frame = pd.DataFrame(rows)
    assert status == "ok"
    assert set(frame["dtype"]) == {"bfloat16"} and set(frame["attention_core"]) == {"float32"}
    step = frame.set_index("metric")["value"]
    assert step["train_flops_per_s"] > 0 and 0 <= step["train_data_share"] < 1 and step["train_step_time"] > 0


def test_a_bf16_runs_losses_stay_near_float32s():
    finals = {}
    for settings in (("train.precision=float32",), ("train.precision=bfloat16", "train.attention_core=float32")):
        _, rows = quality_rows(*settings)
        finals[settings[0]] = next(r["value"] for r in rows if r["metric"] == "val_loss" and r["mode"] == "final")
    assert abs(finals["train.precision=bfloat16"] - finals["train.precision=float32"]) < BF16_SMOKE_TOLERANCE


def test_a_float32_core_under_bf16_autocast_is_float32_attention_of_the_rounded_inputs():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 16, 8, generator=g).to(torch.bfloat16) for _ in range(3))
    with torch.autocast("cpu", dtype=torch.bfloat16), core_dtype(torch.float32):
        y = attend(q, k, v)
    assert y.dtype == torch.bfloat16
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True).to(torch.bfloat16)
    assert torch.equal(y, expected)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert attend(q, k, v).dtype == torch.bfloat16  # outside core_dtype: the inputs' dtype


def test_the_compiled_gelu_form_is_the_tanh_gelu(monkeypatch):
    x = torch.linspace(-8, 8, 10001, dtype=torch.float64)
    eager = gelu_tanh(x)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert torch.allclose(gelu_tanh(x), eager, atol=1e-14, rtol=0)
    x32 = x.float()
    assert (gelu_tanh(x32) - F.gelu(x32, approximate="tanh")).abs().max() <= 1e-6


def test_the_peak_is_the_square_products_flops_over_its_measured_time(monkeypatch):
    timed = []
    monkeypatch.setattr(precision, "median_seconds", lambda fn, device, **kw: timed.append(fn()) or 0.5)
    precision.matmul_rate.cache_clear()
    try:
        n = precision.PEAK_SIZE["cpu"]
        assert precision.matmul_peak(CPU, "bfloat16") == 2 * n**3 / 0.5
        assert timed[0].shape == (n, n) and timed[0].dtype == torch.bfloat16  # the product it timed
    finally:
        precision.matmul_rate.cache_clear()


def test_the_step_precision_holds_at_every_use_of_one_context():
    # Evaluation passes one context to every batch: each ``with`` must enter autocast and the float32 core again.
    import components.kernels as kernels

    precision = autocast(_train("train.precision=bfloat16", "train.attention_core=float32"), CPU)
    for _ in range(3):
        with precision:
            assert torch.is_autocast_enabled("cpu") and kernels._CORE_DTYPE == torch.float32
        assert not torch.is_autocast_enabled("cpu") and kernels._CORE_DTYPE is None


def test_a_probe_discards_its_slow_first_calls_and_times_interleaved(monkeypatch):
    clock = {"now": 0.0}  # a clock the calls advance: what the probe reads, with no wall time in the test
    monkeypatch.setattr(precision.time, "perf_counter", lambda: clock["now"])
    calls = {"a": 0, "b": 0}
    order = []

    def slow_first(name: str, first: float, then: float):
        def fn() -> None:
            calls[name] += 1
            order.append(name)
            clock["now"] += first if calls[name] <= 2 else then
        return fn

    a, b = precision.paired_medians([slow_first("a", 5.0, 0.001), slow_first("b", 5.0, 0.003)], CPU, repeats=4)
    assert (a, b) == (pytest.approx(0.001), pytest.approx(0.003))  # the two warm-up calls never reach the medians
    assert order[4:] == ["a", "b", "b", "a", "a", "b", "b", "a"]  # ABBA after the warm-up


def test_a_bf16_gain_beyond_what_the_square_products_allow_is_measured_again(monkeypatch):
    reads = iter([50.0, 6.0, 5.8])  # the first read disturbed by load, then the machine's
    gains = {}

    def rate(device, dtype, m, k, n):
        if m == k == n:  # the square products: the machine's peaks, bf16 6x float32
            return 6e11 if dtype == "bfloat16" else 1e11
        if dtype == "bfloat16":
            gains["now"] = next(reads)
            return 1e11 * gains["now"]
        return 1e11

    monkeypatch.setattr(precision, "matmul_rate", rate)
    chosen, why = precision._choose_precision(_train("train.precision=auto"), CPU)
    assert chosen == "bfloat16" and "bf16 products 6.00x" in why and "reads 50x, 6x, 5.8x" in why
