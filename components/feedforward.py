"""Feed-forward layers: GPT-2's GELU MLP, Llama-2's SwiGLU and Gemma's GeGLU."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from components.choice import Choice, Claim
from components.config import ArchConfig, ConfigError
from components.declarations import declare
from components.registry import Registry
from components.work import Step, Work, linear

FFNS: Registry[type[nn.Module]] = Registry("ffn.name")


@dataclass
class FFNConfig:
    name: str = "gelu"
    # Explicit hidden width; None means the variant's own rule (4d for GELU, Llama's 2/3 rule for SwiGLU).
    hidden_dim: int | None = None
    # Llama rounds the SwiGLU width up to a multiple of this (256 at 7B). Small d needs a small value
    # to match GELU's 8 d^2 parameters; 256 at d=128 would flatter SwiGLU with +12% parameters.
    multiple_of: int = 8
    multiplier: float | None = None  # Llama-2-70B: 1.3

    def check(self, arch: ArchConfig) -> None:
        if self.hidden_dim is not None and self.hidden_dim < 1:
            raise ConfigError(f"ffn.hidden_dim={self.hidden_dim} must be a positive integer or null")
        if self.multiple_of < 1:
            raise ConfigError(f"ffn.multiple_of={self.multiple_of} must be a positive integer")
        if self.multiplier is not None and self.multiplier <= 0:
            raise ConfigError(f"ffn.multiplier={self.multiplier} must be > 0 or null")

    def hidden(self, d_model: int) -> int:
        return ffn_hidden_dim(self, d_model)


def ffn_hidden_dim(ffn: FFNConfig, d_model: int) -> int:
    """Hidden width of the feed-forward layer.

    GELU: 4d. A gated variant (three matrices: SwiGLU): Llama's rule
    ``multiple_of * ceil(int(multiplier * int(2 * 4d / 3)) / multiple_of)`` (4096 -> 11008; 8192 with 1.3 and
    4096 -> 28672), which keeps three d x h matrices near GELU's 8 d^2.
    """
    if ffn.hidden_dim is not None:
        return ffn.hidden_dim
    if not FFNS.traits(ffn.name).gated:
        return 4 * d_model
    hidden = int(2 * 4 * d_model / 3)
    if ffn.multiplier is not None:
        hidden = int(ffn.multiplier * hidden)
    return ffn.multiple_of * math.ceil(hidden / ffn.multiple_of)


# 2 * sqrt(2 / pi): 0.5 * (1 + tanh(u)) == sigmoid(2u), so the tanh GELU is x * sigmoid(GELU_2C * (x + 0.044715 x^3)).
GELU_2C = 2 * math.sqrt(2 / math.pi)


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's GELU, the tanh approximation (HF ``gelu_new``); exact erf GELU differs by up to 4.7e-4.

    Under ``torch.compile`` the same function as ``x * sigmoid(2u)``: Inductor's CPU code for it runs about twice as
    fast as for ``tanh`` forward and backward (``scripts/gelu_forms.py``), and it equals ``F.gelu``'s to float32
    rounding (``tests/components/test_feedforward.py``). Eager keeps ``F.gelu``'s fused kernel, faster there."""
    if torch.compiler.is_compiling():
        return x * torch.sigmoid(GELU_2C * (x + 0.044715 * x * x * x))
    return F.gelu(x, approximate="tanh")


@FFNS.register("gelu")
class GeluMLP(nn.Module):
    """``W2 gelu_tanh(W1 x)`` with a 4d hidden layer: two matrices, 8 d^2 weights."""

    gated = False  # two d x h matrices; a gated FFN has three and Llama's 2/3 width rule

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        d, h, bias = arch.model.d_model, arch.ffn_hidden, arch.bias.enabled
        self.up = nn.Linear(d, h, bias=bias)
        self.down = nn.Linear(h, d, bias=bias)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        d, h, n, bias = arch.model.d_model, arch.ffn_hidden, step.tokens, arch.bias.enabled
        return linear(d, h, n, bias) + linear(h, d, n, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(gelu_tanh(self.up(x)))


@FFNS.register("swiglu")
class SwiGLU(nn.Module):
    """``W2 (silu(W1 x) * W3 x)`` (Shazeer 2020; Llama's w1/w3/w2): three d x h matrices, h ~ 8d/3."""

    gated = True

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        d, h, bias = arch.model.d_model, arch.ffn_hidden, arch.bias.enabled
        self.gate = nn.Linear(d, h, bias=bias)  # Llama w1
        self.up = nn.Linear(d, h, bias=bias)  # Llama w3
        self.down = nn.Linear(h, d, bias=bias)  # Llama w2

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        d, h, n, bias = arch.model.d_model, arch.ffn_hidden, step.tokens, arch.bias.enabled
        return 2 * linear(d, h, n, bias) + linear(h, d, n, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


@FFNS.register("geglu")
class GeGLU(SwiGLU):
    """``W2 (gelu_tanh(W1 x) * W3 x)`` (Shazeer 2020, "GLU Variants Improve Transformer"; Gemma's MLP, HF
    ``GemmaMLP`` with ``gelu_pytorch_tanh``): SwiGLU with the tanh GELU in place of SiLU. Its matrices, width
    rule and work are SwiGLU's (gate/up/down are Gemma's gate_proj/up_proj/down_proj)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(gelu_tanh(self.gate(x)) * self.up(x))


def build_ffn(arch: ArchConfig) -> nn.Module:
    return FFNS.get(arch.ffn.name)(arch)


FFN = declare(Choice(
    display={"gelu": "GELU", "swiglu": "SwiGLU", "geglu": "GeGLU"},
    group="ffn", title="FFN", config=FFNConfig, registry=FFNS, gpt2="gelu", llama2="swiglu", hook="ffn", order=30,
    rung=3,
    about={"gelu": "GELU (tanh approx.) MLP at 4d, two matrices",
           "swiglu": "SwiGLU at hidden ≈ 8d/3, three matrices (`ffn.multiple_of`, `ffn.multiplier`, `ffn.hidden_dim`)",
           "geglu": "GeGLU: SwiGLU with GELU as the gate (Shazeer 2020; Gemma's MLP)"},
    value_claims={"geglu": Claim(
        "GeGLU does as well as SwiGLU",
        (("Shazeer 2020, Table 1 (T5 base, 65k steps, log-ppl)", "GELU 1.983, GEGLU 1.942, SwiGLU 1.944"),),
        loss="no worse",
    )},
    claim=Claim(
        "SwiGLU improves perplexity per FLOP",
        (("Shazeer 2020, Table 1 (T5 base, 65k steps, log-ppl)", "GELU 1.983, SwiGLU 1.944"),
         ("Narang et al. 2021, Table 1", "early loss: vanilla 2.182, SwiGLU 2.127; steps/s 3.50 / 3.53")),
        loss="better", evidence="per_flop",
    ),
))
