"""In-run ratio checks: what must not regress, timed paired and interleaved in one process.

Absolute times on a shared machine move by several x with the load; the ratio of two things timed
alternately (ABBA, ``ablations.measure.timing.time_paired``) in one process does not, so these checks compare the
two sides of a design choice rather than a time against a stored number. Bands come from measurement
(docs/regression.md): the observed range of the median ratio over repeated runs on machines like CI's, widened
by a margin. Run them 20 times in a row with ``scripts/repeat_ratio_checks.py``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from ablations.measure.quality_step import QualityStep
from ablations.measure.timing import PairedTiming, time_paired
from ablations.results.rows import Summary
from components import build_decoder
from tests.benchmarks import cases
from tests.benchmarks.calls import make_call

CPU = torch.device("cpu")

# GQA (2 KV heads) / MHA, one decode step, batch 4, context 4096, 16 heads, d=1024 (the kv sweep's headline).
# Repeated runs put the median ratio near 0.55 on 2 loaded cores and near 0.3 on a CI machine, where MHA's 128 MiB
# cache per step outruns the caches GQA's 16 MiB still fits. The top keeps the claim "GQA is clearly faster than
# MHA" (at least 1.25x); the bottom sits near the ratio of bytes each step reads at its floor (2 of 16 KV heads:
# the cache 8x smaller, the weights about 0.8x), so only MHA decode getting several times slower than its bytes
# explain falls below it.
DECODE_BAND = (0.15, 0.80)
# Llama-2 block / GPT-2 block, forward+backward at the benchmark size (d=512, 1x256, sweep bias on).
# Repeated runs put the median ratio near 0.9, and a load spike near 1.1; the band catches either block getting
# ~20% slower than the other.
BLOCK_TRAIN_BAND = (0.75, 1.10)
# A measurement outside its band is repeated once and fails only if the repeat is outside too: a load spike
# rarely hits both, a real regression always does.
ATTEMPTS = 2


def paired_ratio(fn_a: Callable[[], object], fn_b: Callable[[], object], rounds: int,
                 min_run_time: float) -> tuple[Summary, PairedTiming]:
    timing = time_paired(fn_a, fn_b, rounds=rounds, min_run_time=min_run_time, warmup=3, device=CPU)
    return Summary.of(timing.ratios), timing


def check_band(name: str, measure: Callable[[], tuple[Summary, PairedTiming]], band: tuple[float, float],
               record_property: Callable[[str, object], None]) -> None:
    lo, hi = band
    failures = []
    for attempt in range(1, ATTEMPTS + 1):
        summary, timing = measure()
        record_property(f"{name}_median" if attempt == 1 else f"{name}_median_retry", round(summary.median, 4))
        record_property(f"{name}_quartiles", f"{summary.p25:.4f}..{summary.p75:.4f}")
        record_property("a_ms", round(statistics.median(timing.a) * 1e3, 3))
        record_property("b_ms", round(statistics.median(timing.b) * 1e3, 3))
        record_property("threads", torch.get_num_threads())
        if lo <= summary.median <= hi:
            return
        rounds = ", ".join(f"{r:.3f}" for r in timing.ratios)
        failures.append(f"attempt {attempt}: median {summary.median:.3f} (quartiles {summary.p25:.3f}.."
                        f"{summary.p75:.3f}; per round {rounds}; a {statistics.median(timing.a) * 1e3:.2f} ms, "
                        f"b {statistics.median(timing.b) * 1e3:.2f} ms)")
    pytest.fail(f"{name}: ratio outside the measured band {lo}..{hi} in every attempt:\n" + "\n".join(failures))


def decode_step(kv: int | None, attn: str, batch: int, context: int) -> Callable[[], object]:
    arch = cases.arch(attn=attn, kv=kv, d_model=1024, n_heads=16, max_seq_len=context + 1)
    torch.manual_seed(0)
    model = build_decoder(arch)
    cache = model.new_cache(batch, context + 1)
    cache.k.normal_()
    cache.v.normal_()
    token = torch.randn(batch, 1, 1024)

    def step() -> torch.Tensor:
        cache.pos = context  # rewind: every call decodes the token at position `context`
        with torch.inference_mode():
            return model(token, cache)

    return step


def test_gqa_decode_at_longest_context_beats_mha(record_property):
    gqa = decode_step(2, "gqa", batch=4, context=4096)
    mha = decode_step(None, "mha", batch=4, context=4096)
    check_band("gqa_over_mha_decode", lambda: paired_ratio(gqa, mha, rounds=20, min_run_time=0.05), DECODE_BAND,
               record_property)


def test_llama2_over_gpt2_block_train_ratio_in_band(record_property):
    calls = []
    for overrides in (cases.SWEEPS["all"]["llama2"], cases.SWEEPS["all"]["gpt2"]):
        torch.manual_seed(0)
        model = build_decoder(cases.arch(**overrides))
        b, t = cases.BLOCK_SHAPE
        calls.append(make_call("train", model, [torch.randn(b, t, cases.D_MODEL)], list(model.parameters())))
    check_band("llama2_over_gpt2_train", lambda: paired_ratio(*calls, rounds=16, min_run_time=0.1),
               BLOCK_TRAIN_BAND, record_property)



def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AMX or AVX512-BF16), as /proc/cpuinfo reports it."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " amx_bf16" in flags or " avx512_bf16" in flags


# The quality model's training step as `train.precision=auto` runs it on a CPU with native bf16 (bf16 products, the
# attention core in float32, compiled) over the float32 eager step, per block, at the default training shape. At one
# thread on a 2-core AMX Xeon the median ratio was 0.54 for GPT-2's block and 0.47 for Llama-2's (1.85x and 2.13x;
# at 2 threads scripts/quality_step_table.py gives 1.78x and 1.95x). The top catches the fast step losing about a
# third of its gain (a precision, core or compile choice regressing); the bottom, a step that stopped doing its work.
FAST_STEP_BAND = (0.2, 0.70)


@pytest.mark.skipif(not native_bf16(), reason="the fast quality step needs a CPU with native bf16 (AMX, AVX512-BF16)")
@pytest.mark.parametrize("block", ["gpt2", "llama2"])
def test_the_fast_quality_step_keeps_its_speedup(block, record_property):
    from scripts.quality_step_table import SETTINGS, quality_of

    quality = quality_of(block)
    tc = quality.train
    w = torch.randint(256, (int(tc.batch), int(tc.context) + 1), generator=torch.Generator().manual_seed(0))
    steps = []
    for _, precision, core, compiled in (SETTINGS[-1], SETTINGS[0]):
        step = QualityStep(quality.arch, replace(tc, precision=precision, attention_core=core, compile=compiled), 0,
                           w, CPU)
        step()  # compiles, and builds the optimizer's state
        steps.append(step)
    check_band(f"fast_quality_step_{block}", lambda: paired_ratio(*steps, rounds=12, min_run_time=0.2),
               FAST_STEP_BAND, record_property)
