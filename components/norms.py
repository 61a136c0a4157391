"""Normalisation layers: GPT-2's LayerNorm and Llama-2's RMSNorm."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from components.registry import Registry

NORMS: Registry[type[nn.Module]] = Registry("norm.name")


@NORMS.register("layernorm")
class LayerNorm(nn.Module):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` (Ba et al. 2016; GPT-2's ``ln_1``/``ln_2``/``ln_f``).

    The bias belongs to the definition of LayerNorm, so it is kept whatever the block's linear-bias setting.
    """

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # torch's fused kernel; it accumulates reduced-precision input in fp32 itself.
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


@NORMS.register("rmsnorm")
class RMSNorm(nn.Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` (Zhang & Sennrich 2019): no mean, no bias.

    ``F.rms_norm`` computes in fp32 for reduced-precision input and casts back after the weight; Meta's
    reference casts back before the weight, which differs by one bf16 rounding and not at all in fp32.
    ``eps`` is passed explicitly: ``eps=None`` would use the
    dtype's machine epsilon, not Llama-2's 1e-5. On CPU in torch 2.13 this op is not fused (six kernels,
    composite backward); that cost is real and the harness reports it rather than hiding it.
    """

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


def build_norm(name: str, dim: int, eps: float) -> nn.Module:
    return NORMS.get(name)(dim, eps=eps)
