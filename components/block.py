"""The pre-norm transformer block shared by GPT-2 and Llama-2: only the parts plugged in differ.

How attention and the FFN join the residual stream is a hook too (``block``): GPT-2's and Llama-2's sequential
``x + attn(norm1(x))`` then ``+ ffn(norm2(x))`` unless a declared choice plugs in another residual (the parallel
block of GPT-J and GPT-NeoX). A residual class states how many norms it needs, its forward and its work.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from components.attention import ATTENTIONS, KVCache, build_attention
from components.choice import hook_classes
from components.config import ArchConfig
from components.feedforward import FFNS, build_ffn
from components.norms import NORMS, build_norm
from components.positions import Rotation, ScoreBias
from components.work import Step, Work


class SequentialResidual:
    """``x = x + attn(norm1(x))``, then ``x + ffn(norm2(x))``: GPT-2's and Llama-2's block."""

    @staticmethod
    def norms(cfg: ArchConfig) -> int:
        return 2

    @staticmethod
    def forward(block: Block, x: torch.Tensor, attend: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        x = x + attend(block.norm1(x))
        return x + block.ffn(block.norm2(x))

    @staticmethod
    def work(cfg: ArchConfig, step: Step) -> Work:
        return Work()  # the residual adds are elementwise; the norms are counted by ``Block.work``


def residual_of(cfg: ArchConfig) -> type:
    """The residual structure a declared ``block`` choice plugs in, else the sequential one."""
    plugged = hook_classes(cfg, "block")
    return plugged[0] if plugged else SequentialResidual


class Block(nn.Module):
    """Norms, attention and the FFN, each chosen by name in ``cfg``, joined to the residual by ``residual_of``."""

    def __init__(self, cfg: ArchConfig, layer: int = 0) -> None:
        super().__init__()
        self.residual = residual_of(cfg)
        # Registered in this order (norm1, attn, norm2, ffn) so that init draws its numbers as it always has.
        self.norm1 = build_norm(cfg.norm.name, cfg.model.d_model, cfg.norm.eps)
        self.attn = build_attention(cfg, layer)
        if self.residual.norms(cfg) > 1:
            self.norm2 = build_norm(cfg.norm.name, cfg.model.d_model, cfg.norm.eps)
        self.ffn = build_ffn(cfg)

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        norm = NORMS.get(cfg.norm.name).work(cfg, step)
        attn, ffn = ATTENTIONS.get(cfg.attn.name).work(cfg, step), FFNS.get(cfg.ffn.name).work(cfg, step)
        residual = residual_of(cfg)
        return residual.norms(cfg) * norm + attn + ffn + residual.work(cfg, step)

    def forward(self, x: torch.Tensor, rotation: Rotation | None = None, cache: KVCache | None = None,
                score_bias: ScoreBias | None = None) -> torch.Tensor:
        return self.residual.forward(self, x, lambda h: self.attn(h, rotation, cache, score_bias))
