"""What ``train.deterministic`` costs the compiled training step: the main job's quality model (the default train
option's sizes, bf16 products, the attention core in float32, compiled), one step with and one without
deterministic algorithms, timed interleaved (ABBA) after warm-up, and the eager step beside them.

    python -m scripts.deterministic_cost [--repeats 21]

Prints each step's median in ms and the deterministic step over the other, per repeat-half so that the spread shows.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from ablations.quality.train_step import TimedStep, deterministic_algorithms
from ablations.runner import plan_point
from blockbench.testing import compose


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args(argv)
    plan = plan_point(compose(["train.precision=bfloat16", "train.attention_core=float32", "train.compile=true",
                               "train.lr=0.002"])).quality
    tc, arch, device = plan.train, plan.arch, torch.device("cpu")
    g = torch.Generator().manual_seed(0)
    w = torch.randint(arch.model.vocab_size, (int(tc.batch), int(tc.context) + 1), generator=g)
    steps = {}
    for name, deterministic, compiled in (("compiled", False, True), ("deterministic", True, True),
                                          ("eager", False, False)):
        step = TimedStep(arch, replace(tc, compile=compiled, deterministic=deterministic), 0, w, device)
        steps[name] = (step, deterministic)
        with deterministic_algorithms(deterministic):
            for _ in range(3):  # compiles, then warms
                step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(args.repeats):
        order = list(steps) if r % 2 == 0 else list(reversed(steps))
        for name in order:
            step, deterministic = steps[name]
            with deterministic_algorithms(deterministic):
                began = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - began)
    for name, ts in times.items():
        print(f"{name:14s} median {1e3 * statistics.median(ts):7.1f} ms over {len(ts)} steps")
    ratios = [d / c for d, c in zip(times["deterministic"], times["compiled"], strict=True)]
    print(f"deterministic / compiled: median {statistics.median(ratios):.3f} "
          f"(quartiles {statistics.quantiles(ratios, n=4)[0]:.3f}-{statistics.quantiles(ratios, n=4)[2]:.3f})")
    print(f"eager / compiled: {statistics.median(times['eager']) / statistics.median(times['compiled']):.3f}")


if __name__ == "__main__":
    main()
