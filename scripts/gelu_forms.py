"""GPT-2's tanh GELU in its two equal forms, eager and compiled: why ``components.feedforward.gelu_tanh`` computes
``x * sigmoid(2u)`` under ``torch.compile`` and ``F.gelu(approximate="tanh")`` eagerly.

    python -m scripts.gelu_forms                 # from the repository root: 2 threads, 20 rounds

At the quality model's FFN activation (32 x 128 tokens by 512, float32 and bfloat16), the forward and the backward of
each form, eager and compiled, each the median of ``--rounds`` calls; and the forms' largest difference in float64
and in float32. Run it alone.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from components.feedforward import GELU_2C


def tanh_form(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


def sigmoid_form(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(GELU_2C * (x + 0.044715 * x * x * x))


def timed(fn: Callable[[torch.Tensor], torch.Tensor], dtype: torch.dtype, rounds: int) -> tuple[float, float]:
    x = torch.randn(32 * 128, 512, dtype=dtype, requires_grad=True)
    grad = torch.randn_like(x)
    for _ in range(3):
        fn(x).backward(grad)
    forward, backward = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        y = fn(x)
        mid = time.perf_counter()
        y.backward(grad)
        forward.append(mid - began)
        backward.append(time.perf_counter() - mid)
    return statistics.median(forward), statistics.median(backward)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{torch.__version__}, {args.threads} threads; 4096 x 512 activations; median ms of {args.rounds} calls")
    print("| dtype | form | eager forward | eager backward | compiled forward | compiled backward |")
    print("|---|---|---|---|---|---|")
    for dtype in (torch.float32, torch.bfloat16):
        for name, fn in (("F.gelu(tanh)", tanh_form), ("x * sigmoid(2u)", sigmoid_form)):
            eager, compiled = timed(fn, dtype, args.rounds), timed(torch.compile(fn), dtype, args.rounds)
            print(f"| {str(dtype).removeprefix('torch.')} | {name} | {eager[0] * 1e3:.3g} | {eager[1] * 1e3:.3g} | "
                  f"{compiled[0] * 1e3:.3g} | {compiled[1] * 1e3:.3g} |")
    for dtype in (torch.float64, torch.float32):
        x = torch.linspace(-8, 8, 1 << 20, dtype=dtype)
        print(f"largest difference of the forms in {str(dtype).removeprefix('torch.')}: "
              f"{(tanh_form(x) - sigmoid_form(x)).abs().max().item():.3g}")


if __name__ == "__main__":
    main()
