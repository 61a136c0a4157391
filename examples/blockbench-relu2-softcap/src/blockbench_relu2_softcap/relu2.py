"""``ffn=relu2``: Primer's squared ReLU, ``W2 relu(W1 x)^2`` (So et al. 2021, "Primer: Searching for Efficient
Transformers for Language Modeling", §3: "squaring ReLU activations").

A new value of blockbench's ``ffn`` group: one class registered in the group's registry, with GPT-2's MLP shape
(two matrices, a 4d hidden layer: ``gated = False`` tells ``ffn_hidden_dim`` so), and what it is for the docs'
tables and the report's claims (``describe``).
"""

from __future__ import annotations

import torch
from torch import nn

from blockbench import FFNS, ArchConfig, Claim, Step, Work, choice, linear


@FFNS.register("relu2")
class SquaredReLU(nn.Module):
    """``down(relu(up(x)) ** 2)``: two d x 4d matrices, as GPT-2's MLP, named ``up``/``down`` so blockbench's init
    scales ``down`` as a residual output projection."""

    gated = False

    def __init__(self, cfg: ArchConfig) -> None:
        super().__init__()
        d, h, bias = cfg.model.d_model, cfg.ffn_hidden, cfg.bias.enabled
        self.up = nn.Linear(d, h, bias=bias)
        self.down = nn.Linear(h, d, bias=bias)

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        """The two matrix products; the square and the ReLU are elementwise (not counted, blockbench's rule)."""
        d, h, n, bias = cfg.model.d_model, cfg.ffn_hidden, step.tokens, cfg.bias.enabled
        return linear(d, h, n, bias) + linear(h, d, n, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)).square())


choice("ffn").describe(
    "relu2", "squared ReLU MLP at 4d, two matrices (Primer, So et al. 2021)", display="squared ReLU",
    claim=Claim("Squared ReLU improves quality per training step over GELU",
                (("So et al. 2021 (Primer), §3 and Figure 3",
                  "squaring ReLU activations and depthwise convolution after Q/K/V account for most of Primer's "
                  "gains; squared ReLU alone is a large improvement over ReLU and GELU on C4 (no figure quoted "
                  "here)"),)))
