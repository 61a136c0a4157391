"""Memory figures that do not depend on allocator luck."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


def parameter_bytes(module: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in module.parameters())


def saved_activation_bytes(module: nn.Module, forward_backward: Callable[[], object]) -> int:
    """Bytes autograd saves for backward during ``forward_backward``, excluding parameters.

    Exact on any device: every tensor autograd packs is seen by the hook; storages are deduplicated so a
    tensor saved by two ops (or views of one buffer) counts once.
    """
    param_storages = {p.untyped_storage().data_ptr() for p in module.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in param_storages:
            seen[ptr] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward_backward()
    return sum(seen.values())


def cuda_peak_bytes(fn: Callable[[], object], device: torch.device) -> int | None:
    """Peak allocated bytes above what was allocated before ``fn``; None off CUDA (no allocator stats)."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    fn()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before
