"""The quality model's training step in each precision and compile setting, against float32 eager, per block.

    python -m scripts.quality_step_table                  # from the repository root: 2 threads, 20 rounds
    python -m scripts.quality_step_table --rounds 40 --out results/runs/quality_step_table.json

For GPT-2's and Llama-2's quality model at the default training shape (``train=default``: d=128, 4 layers, batch
32 x 128 bytes), one step (``ablations.quality.train_step.training_step``: forward, loss, backward, clipping, AdamW) in
each setting of ``SETTINGS``, every setting built on one shared batch. Each round steps every setting once, in a
rotated order, so a load change hits all of them; each setting's speed-up is the median over rounds of float32
eager's time over its own in the same round, with its distribution-free 95% interval. Compiled settings are compiled
before the rounds (their compile time printed apart). Also this machine's square matrix-product rate in float32 and
bf16 and whether the CPU reports AMX or AVX512-BF16. Run it alone: another process on the cores moves the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

import torch

from ablations.config.command_start import reexec_with_tuned_malloc
from ablations.config.plan import QualityPlan
from ablations.measure.intervals import median_interval
from ablations.measure.quality_step import QualityStep
from ablations.predict.quality_seed import composed
from ablations.quality.precision import matmul_peak
from ablations.quality.train_step import step_flops
from ablations.runner import plan_point

# (label, train.precision, train.attention_core, train.compile): the first is what every ratio is against.
SETTINGS = (("float32, eager", "float32", "same", False),
            ("bf16 autocast, eager", "bfloat16", "same", False),
            ("bf16 autocast, attention core in float32, eager", "bfloat16", "float32", False),
            ("the same, torch.compile", "bfloat16", "float32", True))
BLOCKS = ("gpt2", "llama2")
CPU = torch.device("cpu")


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    found = [f for f in ("amx_bf16", "amx_tile", "avx512_bf16") if f" {f}" in flags]
    return ", ".join(found) or "no AMX or AVX512-BF16"


def quality_of(block: str) -> QualityPlan:
    """``block``'s quality model and its baseline's at the default training shape, as the main job plans them."""
    return plan_point(composed([f"variant={block}", "train=default", "measure=false"])).quality


def measure(block: str, rounds: int) -> list[dict]:
    quality = quality_of(block)
    g = torch.Generator().manual_seed(0)
    tc = quality.train
    w = torch.randint(quality.arch.model.vocab_size, (int(tc.batch), int(tc.context) + 1), generator=g)
    steps, compile_s = [], []
    for _, precision, core, compiled in SETTINGS:
        step = QualityStep(quality.arch, replace(tc, precision=precision, attention_core=core, compile=compiled),
                           0, w, CPU)
        began = time.perf_counter()
        step()
        compile_s.append(time.perf_counter() - began)
        for _ in range(3):
            step()
        steps.append(step)
    times: list[list[float]] = [[] for _ in steps]
    for r in range(rounds):
        order = list(range(len(steps)))[r % len(steps):] + list(range(len(steps)))[: r % len(steps)]
        for i in order:
            began = time.perf_counter()
            steps[i]()
            times[i].append(time.perf_counter() - began)
    flops = step_flops(quality.arch, tc)
    out = []
    for (label, precision, core, compiled), t, first in zip(SETTINGS, times, compile_s, strict=True):
        speedup = median_interval([a / b for a, b in zip(times[0], t, strict=True)])
        step = statistics.median(t)
        out.append(dict(block=block, setting=label, precision=precision, attention_core=core, compile=compiled,
                        step_ms=step * 1e3, speedup=speedup.median, speedup_lo=speedup.lo, speedup_hi=speedup.hi,
                        first_step_s=first, gflops=flops / step / 1e9,
                        of_peak=flops / step / matmul_peak(CPU, precision)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    reexec_with_tuned_malloc("scripts.quality_step_table")
    torch.set_num_threads(args.threads)
    rows = [r for block in BLOCKS for r in measure(block, args.rounds)]
    peaks = {p: matmul_peak(CPU, p) / 1e9 for p in ("float32", "bfloat16")}
    print(f"{torch.__version__}, {args.threads} threads, CPU flags: {cpu_flags()}; square-product peak "
          f"float32 {peaks['float32']:.4g} GFLOP/s, bfloat16 {peaks['bfloat16']:.4g} GFLOP/s; {args.rounds} rounds")
    print("| block | step | ms | speed-up over float32 eager [95%] | first step (s) | GFLOP/s | of peak |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['block']} | {r['setting']} | {r['step_ms']:.4g} | {r['speedup']:.2f}x [{r['speedup_lo']:.2f}, "
              f"{r['speedup_hi']:.2f}] | {r['first_step_s']:.3g} | {r['gflops']:.4g} | {r['of_peak']:.1%} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"torch": torch.__version__, "threads": args.threads, "cpu": cpu_flags(),
                                        "peak_gflops": peaks, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
