"""How many operators one call dispatches: the kernel launches a step pays for, about one each.

A decode step moves few bytes, so where it reaches a small fraction of the memory bandwidth its time is the fixed
cost of each launch times their number, not the bytes its design moves. The count beside its ratio says so: views
(which launch nothing) are left out; a fused or graph-captured step launches fewer than it dispatches eagerly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class _Counter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 (torch's protocol)
        if not func.is_view:
            self.calls += 1
        return func(*args, **(kwargs or {}))


def dispatched_ops(fn: Callable[[], object]) -> int:
    """The operators ``fn`` dispatches in one call, views left out (run eagerly: call it on an uncompiled model)."""
    with torch.no_grad(), _Counter() as counter:
        fn()
    return counter.calls
