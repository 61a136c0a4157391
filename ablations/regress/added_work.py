"""Test-only: a block that does a known amount of extra work, to measure whether ``ablations.regress`` catches a
slowdown written into the code (``scripts/regress_power.py``; ``tests/regress/test_added_work.py``).

The script appends ``Block = with_added_work(Block, WIDTH)`` to the head tree's ``components/block.py``: that tree's
decoders (``components.model`` imports ``Block`` after the line runs) build the slower block, the base tree's and
every other module stay as they are. Only torch is imported here, since the line runs while that tree's
``components`` is being imported.
"""

from __future__ import annotations

import torch
from torch import nn


def with_added_work(block: type[nn.Module], width: int) -> type[nn.Module]:
    """``block`` whose output adds two products through a ``(d_model, width)`` zero matrix, ``x + (x @ W) @ W.T``:
    4 * d_model * width FLOPs per token and outputs unchanged. ``width`` 0: ``block`` itself."""
    if width < 0:
        raise ValueError(f"with_added_work: width={width}; allowed: 0 (none) or more columns")
    if width == 0:
        return block

    class WorkedBlock(block):
        def __init__(self, arch: object, *args: object, **kwargs: object) -> None:
            super().__init__(arch, *args, **kwargs)
            # After every module, so each keeps the plain block's init draws; not state, so the state dict is the same.
            self.register_buffer("waste", torch.zeros(arch.model.d_model, width), persistent=False)

        def forward(self, x: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
            x = super().forward(x, *args, **kwargs)
            return x + (x @ self.waste) @ self.waste.T

    return WorkedBlock
