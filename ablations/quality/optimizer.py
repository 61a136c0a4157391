"""The quality run's optimizer: AdamW with weight decay on matrices only, its learning-rate schedule (linear warm-up,
then cosine decay or warmup-stable-decay), and the tail average of the weights that the final score reads
(``train.average_last``)."""

from __future__ import annotations

import math

import torch

from ablations.config.schema import TrainConfig


class TailAverage:
    """The mean of the weights over the last ``span`` optimizer steps (Polyak's tail average), loaded into the model
    for the final score: it scores where the run's last steps went rather than the last step's noise."""

    def __init__(self, span: int) -> None:
        self.span, self.count, self.sums = span, 0, None

    @torch.no_grad()
    def add(self, model: torch.nn.Module) -> None:
        params = [p.detach() for p in model.parameters()]
        if self.sums is None:
            self.sums = [p.double().clone() for p in params]
        else:
            torch._foreach_add_(self.sums, [p.double() for p in params])
        self.count += 1

    @torch.no_grad()
    def load_into(self, model: torch.nn.Module) -> None:
        for p, total in zip(model.parameters(), self.sums or [], strict=True):
            p.copy_(total / self.count)


SCHEDULES = ("cosine", "wsd")


def decay_start(tc: TrainConfig) -> int:
    """The first step a wsd run decays its rate: before it the run is its stable phase, which every longer wsd run
    with the same settings shares step for step (where a cool-down branch forks, ``ablations.quality.branches``)."""
    return int(tc.steps) - round(float(tc.cooldown) * int(tc.steps))


def lr_at(step: int, tc: TrainConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then (``schedule``) cosine decay to ``lr * lr_min_ratio`` at the last
    step, or the rate held until ``decay_start`` and decayed linearly to the same floor over the cool-down."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    floor = tc.lr * tc.lr_min_ratio
    if tc.schedule == "wsd":
        start = decay_start(tc)
        if step < start:
            return tc.lr
        return tc.lr + (floor - tc.lr) * (step - start) / max(1, tc.steps - start)
    progress = (step - tc.warmup) / max(1, tc.steps - tc.warmup)
    return floor + 0.5 * (tc.lr - floor) * (1 + math.cos(math.pi * min(1.0, progress)))


def make_optimizer(model: torch.nn.Module, tc: TrainConfig) -> torch.optim.Optimizer:
    # Decay matrices and embeddings only; norms' weights and biases are scales and offsets (GPT-2/nanoGPT).
    decay = [p for p in model.parameters() if p.ndim >= 2]
    other = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": tc.weight_decay}, {"params": other, "weight_decay": 0.0}]
    if tc.lr is None:  # each arm's rate is resolved before it trains (ablations.quality.learning_rate.arm_rate)
        raise ValueError("make_optimizer needs the arm's own rate: train.lr is null until arm_rate resolves it")
    return torch.optim.AdamW(groups, lr=tc.lr, betas=(0.9, 0.95), eps=1e-8)
