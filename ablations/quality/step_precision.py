"""The precision a training step's forward runs at: ``torch.autocast`` at ``train.precision``, with the attention
core in float32 where ``train.attention_core`` says so. ``ablations.quality.precision`` chooses the settings; this
applies them."""

from __future__ import annotations

import contextlib

import torch

from ablations.config.schema import TrainConfig
from components.kernels import core_dtype

# train.precision's concrete values: the dtype torch.autocast runs the forward in (None: float32, no autocast).
PRECISIONS = {"float32": None, "bfloat16": torch.bfloat16}


class StepPrecision(contextlib.AbstractContextManager):
    """``torch.autocast`` at ``dtype`` on ``device_type``, with the attention core in float32 when ``core_float32``:
    entered anew at each ``with``, so one instance serves every batch of an evaluation."""

    def __init__(self, device_type: str, dtype: torch.dtype, core_float32: bool) -> None:
        self.device_type, self.dtype, self.core_float32 = device_type, dtype, core_float32
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> StepPrecision:
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(torch.autocast(self.device_type, dtype=self.dtype))
        if self.core_float32:
            self._stack.enter_context(core_dtype(torch.float32))
        return self

    def __exit__(self, *exc: object) -> bool | None:
        return self._stack.__exit__(*exc)


def autocast(tc: TrainConfig, device: torch.device) -> contextlib.AbstractContextManager:
    """The forward's precision: ``torch.autocast`` at ``train.precision`` on ``device``, with the attention core in
    float32 where ``train.attention_core`` says so (``StepPrecision``); nothing (float32) for ``float32``. ``tc`` is
    resolved (``ablations.quality.precision.resolve``): no ``auto`` reaches here."""
    if tc.precision not in PRECISIONS:
        raise ValueError(f"train.precision={tc.precision} reaches the step unresolved: "
                         "ablations.quality.precision.resolved chooses it at the run's start")
    dtype = PRECISIONS[tc.precision]
    if dtype is None:
        return contextlib.nullcontext()
    return StepPrecision(device.type, dtype, tc.attention_core == "float32")
