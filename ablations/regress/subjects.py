"""What one side times of a case: the call, the tensors whose memory is renewed every round, and the size of the
design it built.

The parameters, inputs and KV cache are moved to freshly allocated memory before each round, in that round's order,
because where memory-bound state lands moves a ratio of identical code by several percent within one process (the
sweep's decode renews its storage alike: ``ablations.measure.point._measure_decode``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from ablations.measure.shapes import D_MODEL


@dataclass
class Subject:
    """One side's built case: the call to time, the tensors whose memory is renewed every round, and the size of
    the design it built (elements of its parameters and of its KV cache), which the regression check compares
    between the sides (``ablations.regress.comparable``)."""

    call: Callable[[], object]
    state: list[torch.Tensor]
    design: dict[str, int] = field(default_factory=dict)

    def renew(self) -> None:
        # ``.data`` swaps the storage and keeps the tensor objects, so the call's closures see the new memory.
        with torch.no_grad():
            for t in self.state:
                t.data = t.data.clone()


def _elements(tensors: Sequence[torch.Tensor]) -> int:
    return sum(t.numel() for t in tensors)


def _as_tuple(out: object) -> tuple[torch.Tensor, ...]:
    return out if isinstance(out, tuple) else (out,)


def timed_call(mode: str, fn: Callable[..., object], inputs: Sequence[torch.Tensor],
               params: Sequence[nn.Parameter]) -> Subject:
    """Inference forward, or forward+backward for a fixed upstream gradient (no loss op added to the cost)."""
    design = {"parameters": _elements(params)}
    if mode != "train":
        def forward() -> object:
            with torch.inference_mode():
                return fn(*inputs)
        return Subject(forward, [*inputs, *params], design)
    leaves = [x.detach().requires_grad_(True) for x in inputs]
    wrt = [*leaves, *params]
    with torch.no_grad():
        upstream = [torch.randn_like(out) for out in _as_tuple(fn(*leaves))]

    def train() -> object:
        for t in wrt:
            t.grad = None
        return torch.autograd.backward(_as_tuple(fn(*leaves)), upstream, inputs=wrt)

    return Subject(train, [*wrt, *upstream], design)


def decode_step(step: Callable[[torch.Tensor, object], object], cache: object, context: int, batch: int,
                params: Sequence[torch.Tensor], buffers: Sequence[torch.Tensor] = ()) -> Subject:
    """One decode step at position ``context`` of ``cache``, rewound before every call."""
    # Decode cost does not depend on the cached values: random contents spare a prefill of `context` tokens.
    tensors = cache.tensors() if hasattr(cache, "tensors") else [cache.k, cache.v]
    for t in tensors:
        t.normal_()
    token = torch.randn(batch, 1, D_MODEL)

    def call() -> object:
        cache.pos = context  # rewind: every call decodes the token at position `context`
        with torch.inference_mode():
            return step(token, cache)

    return Subject(call, [token, *tensors, *params, *buffers],
                   {"parameters": _elements(params), "KV cache": _elements(tensors)})
