"""``norm=scalenorm``: ScaleNorm, ``g · x / max(‖x‖, eps)`` with one learned scalar g (Nguyen & Salazar 2019,
"Transformers without Tears: Improving the Normalization of Self-Attention").

A new value of blockbench's ``norm`` group, the whole plugin in this one file: one class registered in the group's
registry (``NORMS``) and built as blockbench builds every norm, ``cls(d_model, eps=norm.eps)``, and what it is for
the docs' tables and the report's claims (``describe``). Importing this module registers it: blockbench imports it
through the entry point in ``pyproject.toml``, or ``plugins=blockbench_scalenorm`` with ``src/`` on the path.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from blockbench import NORMS, ArchConfig, Claim, Step, Work, choice, norm

__version__ = "0.1.0"


@NORMS.register("scalenorm")
class ScaleNorm(nn.Module):
    """``g · x / max(‖x‖, eps)`` over the last dimension: one scalar for the whole vector; no mean, no per-channel
    weight, no bias. The paper starts g at √d, where ScaleNorm is ``x / rms(x)``. blockbench's init sets every
    norm parameter (every 1-D parameter not named ``bias``) to 1 after the module is built, so the parameter is
    ``g / √d`` (as x-transformers and MMPose write it): 1 at the start, the paper's g = √d."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps  # norm.eps: the smallest length divided by
        self.sqrt_dim = math.sqrt(dim)
        self.g = nn.Parameter(torch.ones(1))

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        return norm(arch.model.d_model, step.tokens, 1)  # each vector read and written once; one parameter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.to(torch.promote_types(x.dtype, torch.float32))  # fp32 for bf16/fp16 input, as F.rms_norm computes
        length = torch.linalg.vector_norm(xf, dim=-1, keepdim=True).clamp(min=self.eps)
        return (xf * (self.g * self.sqrt_dim) / length).type_as(x)

    def extra_repr(self) -> str:
        return f"sqrt_dim={self.sqrt_dim:g}, eps={self.eps}"


choice("norm").describe(
    "scalenorm", "ScaleNorm: `g · x / ‖x‖`, one learned scalar (Nguyen & Salazar 2019)", display="ScaleNorm",
    claim=Claim("ScaleNorm trains faster and performs better than LayerNorm",
                (("Nguyen & Salazar 2019 (Transformers without Tears), abstract",
                  "ScaleNorm \"for faster training and better performance\"; with PreNorm and FixNorm, +1.1 BLEU on "
                  "average on five low-resource pairs; competitive on WMT'14 English-German"),),
                loss=None))  # the paper reports BLEU, not the loss at equal training
