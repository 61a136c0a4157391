"""Feed-forward layers: GPT-2's GELU MLP and Llama-2's SwiGLU."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from components.config import ArchConfig
from components.registry import Registry

FFNS: Registry[type[nn.Module]] = Registry("ffn.name")


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's GELU, the tanh approximation (HF ``gelu_new``); exact erf GELU differs by up to 4.7e-4."""
    return F.gelu(x, approximate="tanh")


@FFNS.register("gelu")
class GeluMLP(nn.Module):
    """``W2 gelu_tanh(W1 x)`` with a 4d hidden layer: two matrices, 8 d^2 weights."""

    def __init__(self, cfg: ArchConfig) -> None:
        super().__init__()
        d, h, bias = cfg.model.d_model, cfg.ffn_hidden, cfg.bias.enabled
        self.up = nn.Linear(d, h, bias=bias)
        self.down = nn.Linear(h, d, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(gelu_tanh(self.up(x)))


@FFNS.register("swiglu")
class SwiGLU(nn.Module):
    """``W2 (silu(W1 x) * W3 x)`` (Shazeer 2020; Llama's w1/w3/w2): three d x h matrices, h ~ 8d/3."""

    def __init__(self, cfg: ArchConfig) -> None:
        super().__init__()
        d, h, bias = cfg.model.d_model, cfg.ffn_hidden, cfg.bias.enabled
        self.gate = nn.Linear(d, h, bias=bias)  # Llama w1
        self.up = nn.Linear(d, h, bias=bias)  # Llama w3
        self.down = nn.Linear(h, d, bias=bias)  # Llama w2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def build_ffn(cfg: ArchConfig) -> nn.Module:
    return FFNS.get(cfg.ffn.name)(cfg)
