"""The training forward under ``train.compile``: ``torch.compile``d where it compiles, eager where it does not."""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from ablations.config.schema import TrainConfig
from components import LanguageModel

log = logging.getLogger("ablations")


class CompiledOrEager:
    """The model's forward through ``torch.compile``; if compiling fails on the first call (no C++ compiler, a
    backend error), one warning line and the eager model from then on, never a traceback. The failure holds for
    the process: later models go eager at once, without another try or line. ``failed`` says why."""

    # Dynamo keeps one compiled entry per block a process trains (a sweep's arms share LanguageModel.forward); past
    # its default limit of 8 it would run the rest eagerly while the rows said compiled.
    RECOMPILE_LIMIT = 64
    broken = ""  # why compiling failed in this process, once it has

    def __init__(self, lm: LanguageModel) -> None:
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, self.RECOMPILE_LIMIT)
        self.lm, self.failed = lm, CompiledOrEager.broken
        self.compiled = lm if self.failed else torch.compile(lm)

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.failed:
            return self.lm(tokens)
        try:
            return self.compiled(tokens)
        except Exception as exc:  # a compiler missing or refusing: the step is still the same step, eagerly
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self.failed = CompiledOrEager.broken = f"{type(exc).__name__}: {first}"[:300]
            log.warning("torch.compile failed (%s): training eagerly", self.failed)
            return self.lm(tokens)


def training_forward(lm: LanguageModel, tc: TrainConfig) -> Callable[[torch.Tensor], torch.Tensor]:
    """The model as the training steps call it: ``torch.compile``d with ``train.compile`` (one shape, so it compiles
    once; eager if that fails: ``CompiledOrEager``); evaluation calls the eager model, whose lengths vary."""
    return CompiledOrEager(lm) if tc.compile is True else lm
