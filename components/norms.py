"""Normalisation layers: GPT-2's LayerNorm and Llama-2's RMSNorm."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from components.choice import Choice, Claim
from components.config import require_positive
from components.declarations import declare
from components.registry import Registry
from components.work import Step, Work, norm

if TYPE_CHECKING:
    from components.config import ArchConfig

NORMS: Registry[type[nn.Module]] = Registry("norm.name")


@dataclass
class NormConfig:
    name: str = "layernorm"
    eps: float = 1e-5

    def check(self, arch: ArchConfig) -> None:
        require_positive("norm.eps", self.eps)


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

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        return norm(arch.model.d_model, step.tokens, 2 * arch.model.d_model)  # weight and shift

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

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        return norm(arch.model.d_model, step.tokens, arch.model.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


def build_norm(name: str, dim: int, eps: float) -> nn.Module:
    return NORMS.get(name)(dim, eps=eps)


NORM = declare(Choice(
    display={"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"},
    group="norm", title="norm", config=NormConfig, registry=NORMS, gpt2="layernorm", llama2="rmsnorm", hook="norm",
    order=20,
    rung=1,
    about={"layernorm": "LayerNorm (mean, variance, weight, bias)", "rmsnorm": "RMSNorm (RMS only, weight)"},
    claim=Claim(
        "RMSNorm performs as well as LayerNorm at lower cost",
        (("Zhang & Sennrich 2019", "7%–64% less time; 6.9% on the Transformer (WMT14)"),
         ("Narang et al. 2021, Table 1", "early loss: vanilla 2.182, RMSNorm 2.167; steps/s 3.50 / 3.68")),
        loss="no worse", evidence="speed", performs="as well as LayerNorm",
    ),
))
