"""The pre-norm transformer block shared by GPT-2 and Llama-2: only the parts plugged in differ."""

from __future__ import annotations

import torch
from torch import nn

from components.attention import ATTENTIONS, KVCache, build_attention
from components.config import ArchConfig
from components.feedforward import FFNS, build_ffn
from components.norms import NORMS, build_norm
from components.positions import Rotation, ScoreBias
from components.work import Step, Work


class Block(nn.Module):
    """``x + attn(norm1(x))``, then ``x + ffn(norm2(x))``; each part is chosen by name in ``cfg``."""

    def __init__(self, cfg: ArchConfig, layer: int = 0) -> None:
        super().__init__()
        self.norm1 = build_norm(cfg.norm.name, cfg.model.d_model, cfg.norm.eps)
        self.attn = build_attention(cfg, layer)
        self.norm2 = build_norm(cfg.norm.name, cfg.model.d_model, cfg.norm.eps)
        self.ffn = build_ffn(cfg)

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        norm = NORMS.get(cfg.norm.name).work(cfg, step)
        return 2 * norm + ATTENTIONS.get(cfg.attn.name).work(cfg, step) + FFNS.get(cfg.ffn.name).work(cfg, step)

    def forward(self, x: torch.Tensor, rotation: Rotation | None = None, cache: KVCache | None = None,
                score_bias: ScoreBias | None = None) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), rotation, cache, score_bias)
        return x + self.ffn(self.norm2(x))
