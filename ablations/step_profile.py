"""``blockbench step [KEY=VALUE ...]`` (``python -m ablations.step_profile``): how well one point's quality
training step uses this machine.

For the point the overrides describe (as ``python -m ablations`` takes them: ``variant=llama2``, ``norm=rmsnorm``,
``train.precision=float32``, ...), its quality model and its baseline's, each stepped as the run trains it after
every ``auto`` is measured (``ablations.quality.precision``): the median step, the work model's training FLOPs per
step, the achieved FLOP/s against this machine's measured matrix-product peak at the step's precision, the
profiler's split of the step (``ablations.measure.step_split``) and the time to read one batch from the corpus.
Measured, not predicted; run it alone, as every timing.
"""

from __future__ import annotations

import sys
import time

import torch
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from ablations.config.errors import Fault, UsageError, command
from ablations.measure.quality_step import quality_steps
from ablations.measure.step_split import SPLIT, split_of
from ablations.predict.quality_seed import composed
from ablations.quality.data import CorpusError, open_corpus
from ablations.quality.precision import median_seconds, resolved
from ablations.quality.train_step import step_flops
from ablations.quality.windows import train_starts, windows
from ablations.runner import plan_point
from components.config import ConfigError


def run(args: list[str]) -> str:
    try:
        cfg = composed(args)
        plan = plan_point(cfg)
    except (ConfigError, HydraException, OmegaConfBaseException) as exc:  # they describe the overrides
        raise UsageError(" ".join(str(exc).split())) from None
    if plan.quality is None:
        raise UsageError("train.enabled=false: the point trains no quality model")
    torch.set_num_threads(plan.machine.threads)
    device = plan.machine.device
    quality = resolved(plan.quality, device)
    tc = quality.train
    try:
        corpus = open_corpus(quality.data)
    except CorpusError as exc:  # checked at the door; gone since
        raise Fault(str(exc)) from None
    starts = train_starts(len(corpus.train), int(tc.context), 8, int(tc.batch), 0)
    read = median_seconds(lambda: windows(corpus.train, starts[0], int(tc.context) + 1), device)
    lines = [f"Quality step of {plan.pair.variant} against {plan.pair.baseline_name}: {tc.batch} x {tc.context} "
             f"bytes, d={tc.d_model}, {tc.n_layers} layers, {plan.machine.threads} threads on {device.type}; "
             f"{quality.step_choice}.",
             f"Matrix-product peak at {tc.precision}: {quality.peak_flops / 1e9:.4g} GFLOP/s (square product, "
             f"measured). Reading one batch: {read * 1e3:.3g} ms.", "",
             "| arm | step (ms) | first step (s) | train GFLOP/step | achieved GFLOP/s | of peak | "
             + " | ".join(SPLIT.values()) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(SPLIT)]
    for name, arch, step in zip((plan.pair.variant, plan.pair.baseline_name), (quality.arch, quality.baseline),
                                quality_steps(quality, device), strict=True):
        began = time.perf_counter()
        step()  # the first step builds the optimizer's state and, compiled, compiles
        first = time.perf_counter() - began
        seconds = median_seconds(step, device, repeats=10)
        flops = step_flops(arch, tc)
        split = split_of(step, device)
        lines.append(f"| {name} | {seconds * 1e3:.4g} | {first:.3g} | {flops / 1e9:.4g} | "
                     f"{flops / seconds / 1e9:.4g} | {flops / seconds / quality.peak_flops:.1%} | "
                     + " | ".join(f"{split[k]:.0%}" for k in SPLIT) + " |")
    lines += ["", "Step: median of 10 after the first (which builds the optimizer's state and, compiled, compiles) and "
              "2 warm-up steps. Split: the profiler's self time over 5 steps."]
    return "\n".join(lines)


@command("step")
def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print("usage: blockbench step [KEY=VALUE ...]\n\n" + __doc__.strip())
        return 0
    print(run([a for a in args if not a.startswith("-")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
