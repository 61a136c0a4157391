"""The timed callables: an inference forward, or a forward plus backward driven by a fixed upstream gradient.

Backward takes a preallocated gradient for the output instead of a scalar loss: a loss such as
``out.square().mean()`` adds elementwise work that, for an op as small as a norm, is as large as the op.
Gradients are reset to None before each backward, so every call allocates them afresh and does the same
work (``torch.autograd.grad`` would avoid that, but ``FlopCounterMode`` cannot count through it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from ablations.measure.flops import count_flops
from components import count_parameters

MODES = ("forward", "train")  # "train" is forward+backward, as the harness's results tables name it


def forward_call(fn: Callable[..., object], *inputs: torch.Tensor) -> Callable[[], object]:
    def call() -> object:
        with torch.inference_mode():
            return fn(*inputs)

    return call


def train_call(fn: Callable[..., object], inputs: Sequence[torch.Tensor], params: Sequence[nn.Parameter]) -> (
        Callable[[], object]):
    """Forward, then the gradients of every input and parameter for a fixed random output gradient."""
    leaves = [x.detach().requires_grad_(True) for x in inputs]
    wrt = [*leaves, *params]
    with torch.no_grad():
        outputs = _as_tuple(fn(*leaves))
    upstream = [torch.randn_like(out) for out in outputs]

    def call() -> object:
        for t in wrt:
            t.grad = None
        return torch.autograd.backward(_as_tuple(fn(*leaves)), upstream, inputs=wrt)

    return call


def make_call(mode: str, fn: Callable[..., object], inputs: Sequence[torch.Tensor],
              params: Sequence[nn.Parameter] = ()) -> Callable[[], object]:
    if mode == "forward":
        return forward_call(fn, *inputs)
    if mode == "train":
        return train_call(fn, inputs, params)
    raise ValueError(f"mode {mode!r} is not one of {MODES}")


def describe(module: nn.Module, call: Callable[[], object], **info: object) -> dict[str, object]:
    """``extra_info`` for one benchmark: parameters and counted FLOPs (attention under the math backend)."""
    return dict(info, params=count_parameters(module), flops=count_flops(call))


def _as_tuple(out: object) -> tuple[torch.Tensor, ...]:
    return out if isinstance(out, tuple) else (out,)
