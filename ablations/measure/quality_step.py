"""The quality model's training step, the variant against the baseline, paired, in the point's process.

Time to loss (``ablations.quality.multiplier``: how much sooner in wall time a variant reaches the baseline's loss) is
the compute multiplier in steps over this ratio, so the step timed is the one the quality run runs
(``ablations.quality.train_step.training_step``): the quality model at ``train``'s sizes and precision
(``train.precision``, ``train.attention_core``, ``train.compile``, as resolved at the run's start), a ``train.batch``
x ``train.context`` batch of ids, cross-entropy, backward, clipping at ``train.clip``, AdamW (``make_optimizer``).
Left out: reading the batch from the corpus, the same for both arms, and the evaluations, which the step count does
not set.

Rows (``add_paired``, prefix ``quality_step_``, mode ``quality_step``, batch x seq_len the training shape): the
ratio ``quality_step_latency_ratio`` with its quartiles, its 95% interval ``quality_step_ratio_interval`` (the
profile's headline rule: rounds until it is within ``target_halfwidth``), both latencies and the tokens/s. At the
baseline's own point it is the A/A ratio, the timing's noise floor the report reads beside the others. Then the
variant's step profiled (``step_split``): ``step_share_<part>`` for each part of ``SPLIT``.
"""

from __future__ import annotations

import torch

from ablations.config.checks import Shape
from ablations.config.plan import QualityPlan, TimingPlan
from ablations.measure.intervals import rounds_rule_of
from ablations.measure.point import add_paired, paired_with, phase
from ablations.measure.step_split import SPLIT, SPLIT_CALLS, split_of
from ablations.measure.timing import time_call
from ablations.quality.train_step import TimedStep
from ablations.quality.windows import to_device
from ablations.results.rows import Rows

MODE = "quality_step"
# One arm of the timing: the step the quality run takes (``ablations.quality.train_step.TimedStep``).
QualityStep = TimedStep


def quality_batch(quality: QualityPlan, device: torch.device) -> torch.Tensor:
    """One fixed batch of ``train.batch`` windows of ``train.context`` + 1 random ids below the quality model's
    vocabulary, drawn from the point's seed: what both arms step on."""
    tc = quality.train
    g = torch.Generator().manual_seed(quality.seed)
    vocab = quality.arch.model.vocab_size
    return to_device(torch.randint(vocab, (int(tc.batch), int(tc.context) + 1), generator=g), device)


def quality_steps(quality: QualityPlan, device: torch.device) -> tuple[QualityStep, QualityStep]:
    """The variant's and the baseline's quality model, each with its own optimizer, stepping on one shared batch."""
    w = quality_batch(quality, device)
    return tuple(QualityStep(arch, quality.train, quality.seed, w, device)  # type: ignore[return-value]
                 for arch in (quality.arch, quality.baseline))


def measure_quality_step(timing: TimingPlan, quality: QualityPlan, rows: Rows) -> None:
    """The quality model's training step, variant over baseline, timed paired under the profile's headline rule and
    appended to ``rows`` (module docstring)."""
    p, tc, device = timing.profile, quality.train, timing.machine.device
    shape = Shape(int(tc.batch), int(tc.context))
    with phase(rows, MODE, shape):
        # The step's rows say how it ran, as the seeds' rows do (``ablations.quality.run``).
        step_rows = Rows(base=dict(rows.base, step_choice=quality.step_choice,
                                   attention_core=tc.attention_core if tc.precision != "float32" else None))
        step_a, step_b = quality_steps(quality, device)
        # The first step of each compiles it under train.compile: timed apart, as measure_point does the forward.
        first = [time_call(step, device)[1] for step in (step_a, step_b)]
        if tc.compile:
            step_rows.add("first_call_time", first[0], "s", mode=MODE, shape=shape,
                          note="includes torch.compile of the quality model's training forward")
        rule = rounds_rule_of(p, headline=True)
        paired = paired_with(rule, step_a, step_b, min_run_time=p.min_run_time, warmup=p.warmup, device=device)
        add_paired(step_rows, f"{MODE}_", MODE, shape, paired, shape.batch * shape.seq, rule)
        for part, share in split_of(step_a, device).items():
            step_rows.add(f"step_share_{part}", share, "ratio", mode=MODE, shape=shape, statistic="share",
                          note=f"{SPLIT[part]}: share of the variant's step, profiler self time over "
                               f"{SPLIT_CALLS} steps")
        rows.rows.extend(step_rows.rows)
