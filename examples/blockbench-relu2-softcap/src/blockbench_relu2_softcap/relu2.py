"""``ffn=relu2``: Primer's squared ReLU, ``W2 relu(W1 x)^2`` (So et al. 2021, "Primer: Searching for Efficient
Transformers for Language Modeling", §3: "squaring ReLU activations").

A new value of blockbench's ``ffn`` group: one class registered in the group's registry, GPT-2's MLP (two matrices,
a 4d hidden layer) with another activation, and what it is for the docs' tables and the report's claims
(``describe``).
"""

from __future__ import annotations

import torch

from blockbench import FFNS, Claim, GeluMLP, choice


@FFNS.register("relu2")
class SquaredReLU(GeluMLP):
    """``down(relu(up(x)) ** 2)``: GPT-2's MLP with the square of a ReLU for its GELU. Its matrices (``up``, ``down``:
    blockbench's init scales ``down`` as a residual output projection), its 4d width and its work are GPT-2's; the
    square and the ReLU are elementwise (not counted, blockbench's rule)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)).square())


choice("ffn").describe(
    "relu2", "squared ReLU MLP at 4d, two matrices (Primer, So et al. 2021)", display="squared ReLU",
    claim=Claim("Squared ReLU improves quality per training step over GELU",
                (("So et al. 2021 (Primer), §3 and Figure 3",
                  "squaring ReLU activations and depthwise convolution after Q/K/V account for most of Primer's "
                  "gains; squared ReLU alone is a large improvement over ReLU and GELU on C4 (no figure quoted "
                  "here)"),)))
