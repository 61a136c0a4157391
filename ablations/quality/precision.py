"""The quality model's training step as this machine runs it fastest: precision, attention core and compilation,
each chosen by a short measurement where its setting is ``auto``, and the matrix-product peak the step's efficiency
is read against.

- ``train.precision=auto``: bfloat16 (autocast, float32 weights and optimizer) where bf16 matrix products at the
  model's FFN shape run at least ``BF16_GAIN`` x float32's (CPUs with AMX or AVX512-BF16, GPUs with bf16); else
  float32. A CPU without native bf16 emulates it and is slower: it keeps float32.
- ``train.attention_core=auto`` (under bfloat16): the causal SDPA core's forward and backward at the model's shape
  timed in bf16 and in float32 (with the casts); the faster runs. On CPUs SDPA's bf16 flash backward can be several
  times slower than float32's, which would cost more than the products save.
- ``train.compile=auto``: the baseline's quality model stepped eagerly and compiled; compiled where the measured
  saving per step times the steps the point plans exceeds the measured compile time, which it pays once per model
  and process. Where it cannot compile (no C++ compiler), eager.

``resolve`` returns the training settings with every ``auto`` replaced by what was chosen and a one-line ``why``,
which every quality row of the point records (column ``step_choice``). The measurements are cached for the process,
so a sweep's points choose alike. ``matmul_peak`` is the machine's square matrix-product rate at a dtype.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from ablations.config.plan import QualityPlan
from ablations.config.schema import TrainConfig
from ablations.quality import distributed
from ablations.quality.compiled import CompiledOrEager
from ablations.quality.seeds import seed_rule
from ablations.quality.train_step import TimedStep, deterministic_algorithms
from components import ArchConfig
from components.config import ConfigError

log = logging.getLogger("ablations")

PRECISION_VALUES = ("float32", "bfloat16", "auto")
CORE_VALUES = ("same", "float32", "auto")
# bf16 products must beat float32's by this much to be chosen: below it the rounding buys too little time.
BF16_GAIN = 1.25
# The square product ``matmul_peak`` times, by device type: large enough to reach the machine's rate.
PEAK_SIZE = {"cpu": 2048, "cuda": 8192}


@dataclass(frozen=True)
class StepChoice:
    """The resolved training settings, why each ``auto`` chose what it did, and the matrix-product peak at the
    chosen precision (FLOP/s) the step's achieved rate is read against."""

    train: TrainConfig
    why: str
    peak_flops: float


def check_step_settings(tc: TrainConfig, device: torch.device) -> None:
    """``train.precision``, ``train.attention_core`` and ``train.compile``: one line each naming the key."""
    if tc.precision not in PRECISION_VALUES:
        raise ConfigError(f"train.precision={tc.precision} is not known; allowed: {', '.join(PRECISION_VALUES)}")
    if tc.attention_core not in CORE_VALUES:
        raise ConfigError(f"train.attention_core={tc.attention_core} is not known; allowed: {', '.join(CORE_VALUES)}")
    if not (tc.compile is True or tc.compile is False or tc.compile == "auto"):
        raise ConfigError(f"train.compile={tc.compile!r} is not known; allowed: true, false, auto")
    if tc.precision == "bfloat16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ConfigError("train.precision=bfloat16 but this CUDA device does not support bfloat16; use float32")


def resolve(tc: TrainConfig, baseline: ArchConfig, device: torch.device, planned_steps: int) -> StepChoice:
    """``tc`` with each ``auto`` measured and replaced (module docstring); ``baseline``: the quality model the compile
    decision steps; ``planned_steps``: the optimizer steps the point plans for one arm."""
    reasons = []
    precision = tc.precision
    if precision == "auto":
        precision, reason = _choose_precision(tc, device)
        reasons.append(reason)
    core = tc.attention_core
    if precision == "float32":
        core = "same"  # the core is float32 already
    elif core == "auto":
        core, reason = _choose_core(tc, device)
        reasons.append(reason)
    chosen = replace(tc, precision=precision, attention_core=core)
    compiled = tc.compile
    if compiled == "auto":
        compiled, reason = _choose_compile(chosen, baseline, device, planned_steps)
        reasons.append(reason)
    chosen = replace(chosen, compile=bool(compiled))
    ran = f"{precision}, attention core {'float32' if core == 'float32' else precision}, " + (
        "compiled" if compiled else "eager")
    why = ran + (": " + "; ".join(reasons) if reasons else " (as set)")
    return StepChoice(chosen, why, matmul_peak(device, precision))


def resolved(quality: QualityPlan, device: torch.device) -> QualityPlan:
    """``quality`` with its training settings resolved (``resolve``), the reason and the peak on it. Under torchrun
    every rank measures (the compile probe's steps average gradients over the ranks, so all must take them) and
    every rank takes rank 0's answer, so all ranks train alike."""
    tc = quality.train
    choice = distributed.from_writer(resolve(tc, quality.baseline, device, planned_steps(tc)))
    return replace(quality, train=choice.train, step_choice=choice.why, peak_flops=choice.peak_flops)


def planned_steps(tc: TrainConfig) -> int:
    """The optimizer steps the baseline's quality model takes at a point's first look: its seeds and, with
    ``train.budgets``, its compute curve's (``ablations.quality.run``), which the compile is paid once for."""
    seeds = seed_rule(tc).looks[0]
    runs = [*(tc.budgets or []), *(tc.check_budgets or [])]
    curve = min(seeds, int(tc.budget_seeds or seeds)) * sum(float(b) for b in runs if float(b) != 1)
    return round(int(tc.steps) * (seeds + curve))


def median_seconds(fn: Callable[[], object], device: torch.device, repeats: int = 7, warmup: int = 2) -> float:
    """The median wall time of ``fn`` over ``repeats`` calls after ``warmup`` (first calls build kernels and caches:
    discarded), synchronising CUDA around each."""
    return paired_medians([fn], device, repeats, warmup)[0]


def paired_medians(fns: list[Callable[[], object]], device: torch.device, repeats: int = 7,
                   warmup: int = 2) -> list[float]:
    """Each of ``fns``' median wall time, timed interleaved round by round (ABBA: the order reverses each round) after
    ``warmup`` calls of each, so a load that comes and goes during the probe weighs on each alike."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for r in range(repeats):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            began = time.perf_counter()
            fns[i]()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times[i].append(time.perf_counter() - began)
    return [statistics.median(t) for t in times]


@functools.cache
def matmul_rate(device: torch.device, dtype_name: str, m: int, k: int, n: int) -> float:
    """FLOP/s of an (m, k) by (k, n) product in ``dtype_name`` on ``device`` (median of repeats)."""
    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(m, k, device=device).to(dtype), torch.randn(k, n, device=device).to(dtype)
    return 2 * m * k * n / median_seconds(lambda: a @ b, device)


def matmul_peak(device: torch.device, precision: str) -> float:
    """This machine's matrix-product rate at ``precision`` (FLOP/s): a square ``PEAK_SIZE`` product, measured."""
    size = PEAK_SIZE.get(device.type, 2048)
    return matmul_rate(device, precision, size, size, size)


# A bf16 gain at the model's shape more than this multiple of the square products' (the machine's peaks) is a probe
# disturbed by load, not a property of the machine: it is measured again (``PROBE_TRIES`` reads in all).
PLAUSIBLE = 1.5
PROBE_TRIES = 3


def _choose_precision(tc: TrainConfig, device: torch.device) -> tuple[str, str]:
    if device.type == "cuda":
        native = torch.cuda.is_bf16_supported()
        return ("bfloat16" if native else "float32"), f"precision {'bfloat16' if native else 'float32'}: CUDA " + (
            "supports bf16" if native else "without bf16")
    m, k, n = int(tc.batch) * int(tc.context), int(tc.d_model), 4 * int(tc.d_model)
    gain, remeasured = _bf16_gain(device, m, k, n)
    chosen = "bfloat16" if gain >= BF16_GAIN else "float32"
    return chosen, (f"precision {chosen}: bf16 products {gain:.2f}x float32's at {m}x{k}x{n} "
                    f"({'at least' if chosen == 'bfloat16' else 'below'} {BF16_GAIN}x){remeasured}")


def _bf16_gain(device: torch.device, m: int, k: int, n: int) -> tuple[float, str]:
    """bf16's product rate over float32's at (m, k, n), and a note where a first read beyond what the machine's
    square products allow (``PLAUSIBLE`` x their ratio) was measured again: the median of the reads is kept."""
    gain = matmul_rate(device, "bfloat16", m, k, n) / matmul_rate(device, "float32", m, k, n)
    bound = PLAUSIBLE * matmul_peak(device, "bfloat16") / matmul_peak(device, "float32")
    if gain <= bound:
        return gain, ""
    fresh = getattr(matmul_rate, "__wrapped__", matmul_rate)  # past the process's cache: a new measurement
    reads = [gain] + [fresh(device, "bfloat16", m, k, n) / fresh(device, "float32", m, k, n)
                      for _ in range(PROBE_TRIES - 1)]
    kept = statistics.median(reads)
    return kept, (f" (reads {', '.join(f'{r:.3g}x' for r in reads)}: the first beyond {bound:.3g}x, {PLAUSIBLE:g}x "
                  "the square products' ratio, so the median is kept)")


def _choose_core(tc: TrainConfig, device: torch.device) -> tuple[str, str]:
    shape = (int(tc.batch), int(tc.n_heads), int(tc.context), int(tc.d_model) // int(tc.n_heads))
    same, f32 = _core_seconds(device, shape, "same"), _core_seconds(device, shape, "float32")
    chosen = "float32" if f32 < same else "same"
    return chosen, (f"attention core {'float32' if chosen == 'float32' else 'bfloat16'}: forward+backward "
                    f"{same * 1e3:.3g} ms in bf16, {f32 * 1e3:.3g} ms in float32 with casts")


@functools.cache
def _core_seconds(device: torch.device, shape: tuple[int, int, int, int], core: str) -> float:
    q, k, v = (torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device=device, dtype=torch.bfloat16)

    def step() -> None:
        query, key, value = (t.float() for t in (q, k, v)) if core == "float32" else (q, k, v)
        F.scaled_dot_product_attention(query, key, value, is_causal=True).to(torch.bfloat16).backward(grad)

    return median_seconds(step, device, repeats=5)


def missing_compiler(device: torch.device) -> str:
    """Why Inductor cannot compile on ``device`` (empty when it can): on a CPU it needs a C++ compiler."""
    if device.type != "cpu":
        return ""
    from torch._inductor import config

    cxx = config.cpp.cxx[-1] if isinstance(config.cpp.cxx, tuple) and config.cpp.cxx[-1] else "g++"
    return "" if shutil.which(str(cxx)) or shutil.which("c++") else f"no C++ compiler ({cxx}) for torch.compile"


def _choose_compile(tc: TrainConfig, baseline: ArchConfig, device: torch.device,
                    planned_steps: int) -> tuple[bool, str]:
    missing = missing_compiler(device)
    if missing:
        return False, f"eager: {missing}"
    eager, compiled, compile_s, failed = _compile_probe(tc, baseline, device)
    if failed:
        return False, f"eager: torch.compile failed ({failed})"
    saved = eager - compiled
    pays = saved > 0 and saved * planned_steps > compile_s
    return pays, (f"{'compiled' if pays else 'eager'}: step {eager * 1e3:.3g} ms eager, {compiled * 1e3:.3g} ms "
                  f"compiled, compile {compile_s:.3g} s against {planned_steps} planned steps")


# The compile probe's answers for this process, by what sets the step's cost (``_compile_probe``).
_PROBED: dict[str, tuple[float, float, float, str]] = {}


def _compile_probe(tc: TrainConfig, baseline: ArchConfig, device: torch.device) -> tuple[float, float, float, str]:
    """The baseline's step eager and compiled (median seconds), the compile time (the first compiled call less a
    compiled step), and why compiling failed (empty if it did not). Cached by what sets the step's cost."""
    cost = {k: getattr(tc, k) for k in ("batch", "context", "precision", "attention_core", "clip", "common_init",
                                        "deterministic")}
    key = json.dumps({"arch": baseline.to_dict(), "train": cost, "device": str(device)}, sort_keys=True, default=str)
    if key not in _PROBED:
        with deterministic_algorithms(bool(tc.deterministic)):  # the step as the seeds will run it
            _PROBED[key] = _probe_compile(tc, baseline, device)
    return _PROBED[key]


def _probe_compile(tc: TrainConfig, baseline: ArchConfig, device: torch.device) -> tuple[float, float, float, str]:
    g = torch.Generator().manual_seed(0)
    w = torch.randint(baseline.model.vocab_size, (int(tc.batch), int(tc.context) + 1), generator=g).to(device)
    eager_step = TimedStep(baseline, replace(tc, compile=False), 0, w, device)
    step = TimedStep(baseline, replace(tc, compile=True), 0, w, device)
    began = time.perf_counter()
    step()
    first = time.perf_counter() - began
    failed = step.forward.failed if isinstance(step.forward, CompiledOrEager) else ""
    if failed:
        eager, compiled = median_seconds(eager_step, device, repeats=5), math.inf
    else:  # interleaved, so that load during the probe slows both alike
        eager, compiled = paired_medians([eager_step, step], device, repeats=5)
    return eager, compiled, max(0.0, first - compiled) if not failed else math.inf, failed
