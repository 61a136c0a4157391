"""One optimizer step of the quality model: the step ``train`` runs, its work model FLOPs, and the same step as a
call to time (``TimedStep``) for ``ablations.measure.quality_step`` and ``ablations.quality.precision``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from ablations.config.schema import TrainConfig
from ablations.quality import distributed
from ablations.quality.compiled import training_forward
from ablations.quality.learning_rate import with_rate
from ablations.quality.optimizer import make_optimizer
from ablations.quality.step_precision import autocast
from ablations.roofline.work import mode_work
from components import ArchConfig, LanguageModel, build_lm, common_random_init


def training_step(lm: LanguageModel, forward: Callable[[torch.Tensor], torch.Tensor], opt: torch.optim.Optimizer,
                  w: torch.Tensor, tc: TrainConfig, device: torch.device) -> float:
    """One optimizer step on the windows ``w`` (batch, context + 1 ids): the forward (``forward``, from
    ``training_forward``) under ``autocast``, next-id cross-entropy, backward, gradient clipping at ``train.clip``,
    the optimizer's step. Returns the loss (under torchrun averaged over the ranks); a NaN or infinite one returns
    before the backward, leaving the weights as they were. What ``train`` runs every step, and what
    ``ablations.measure.quality_step`` times."""
    with autocast(tc, device):
        logits = forward(w[:, :-1]).float()
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
    value = distributed.mean(loss.item(), device)
    if not math.isfinite(value):
        return value
    opt.zero_grad(set_to_none=True)
    loss.backward()
    distributed.average_gradients(lm)
    if tc.clip > 0:
        torch.nn.utils.clip_grad_norm_(lm.parameters(), tc.clip)
    opt.step()
    return value


def step_flops(arch: ArchConfig, tc: TrainConfig) -> float:
    """The work model's FLOPs of one training step of ``arch`` on a ``train.batch`` x ``train.context`` batch, the LM
    head included (``ablations.roofline.work``): what a step's achieved rate and the multiplier's FLOPs read."""
    return mode_work(arch, "train", int(tc.batch), int(tc.context), lm_head=True).flops


# The rate every timed step runs at. Each call is a real optimizer step, so the weights move from call to call (and
# each arm takes its own number of calls). That does not bias a timing: what a step costs does not depend on the
# weights' values (dense kernels, no work that depends on the data, the optimizer's state a fixed size after its first
# step), so long as they stay finite and normal. A small rate keeps them near their initialisation over the thousands
# of steps a long measurement takes on its one batch: no divergence, no overflow, no denormals (slow on a CPU). The
# optimizer's state is created by the first, untimed call, so no timed call pays for it.
STEP_LR = 1e-4


class TimedStep:
    """The step ``train`` takes, as a call to time: the quality model ``arch`` built as ``train`` builds it (seeded,
    common init where the run uses it), its own AdamW at ``STEP_LR``, and one ``training_step`` on the batch ``w``
    per call. ``ablations.measure.quality_step`` times two against each other; ``ablations.quality.precision`` times
    one eagerly and compiled."""

    def __init__(self, arch: ArchConfig, tc: TrainConfig, seed: int, w: torch.Tensor, device: torch.device):
        torch.manual_seed(seed)
        self.arch = arch
        self.lm: LanguageModel = build_lm(arch, device=device)
        if tc.common_init:
            common_random_init(self.lm, seed)
        self.lm.train()
        self.forward = training_forward(self.lm, tc)
        self.opt = make_optimizer(self.lm, with_rate(tc, STEP_LR))
        self.tc, self.w, self.device = tc, w, device

    def __call__(self) -> float:
        value = training_step(self.lm, self.forward, self.opt, self.w, self.tc, self.device)
        if not math.isfinite(value):  # training_step skipped the update; a timing of that would be no step's
            raise FloatingPointError(f"the quality model's training loss became {value}")
        return value


@contextmanager
def deterministic_algorithms(on: bool) -> Iterator[None]:
    """``torch.use_deterministic_algorithms(on)`` for the block, warning (not failing) where an op has no
    deterministic kernel; the caller's setting restored after."""
    before, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(on, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn)
