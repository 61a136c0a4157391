"""The pre-norm transformer block shared by GPT-2 and Llama-2: only the parts plugged in differ.

How attention and the FFN join the residual stream is a hook too (``block``): GPT-2's and Llama-2's sequential
``x + attn(norm1(x))`` then ``+ ffn(norm2(x))`` unless a declared choice plugs in another residual (the parallel
block of GPT-J and GPT-NeoX). A residual class states how many norms it needs, its forward and its work; its
forward gets the two branches as functions, ``attend`` and ``feed``, so that what the ``branch`` hook puts on their
outputs (Gemma-2's post-norms) applies under any residual. A block no ``branch`` choice touches passes its ``ffn``
itself as ``feed`` and builds nothing more: the same modules, init draws and forward as a block without the hook.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from components.attention import ATTENTIONS, KVCache, build_attention
from components.config import ArchConfig, check_one_residual
from components.declarations import hook_classes
from components.feedforward import FFNS, build_ffn
from components.norms import NORMS, build_norm
from components.positions import Rotation, ScoreBias
from components.registry import traits
from components.work import Step, Work


class SequentialResidual:
    """``x = x + attn(norm1(x))``, then ``x + ffn(norm2(x))``: GPT-2's and Llama-2's block."""

    @staticmethod
    def norms(arch: ArchConfig) -> int:
        return 2

    @staticmethod
    def forward(block: Block, x: torch.Tensor, attend: Branch, feed: Branch) -> torch.Tensor:
        x = x + attend(block.norm1(x))
        return x + feed(block.norm2(x))

    @staticmethod
    def work(arch: ArchConfig, step: Step) -> Work:
        return Work()  # the residual adds are elementwise; the norms are counted by ``Block.work``


Branch = Callable[[torch.Tensor], torch.Tensor]


def residual_of(arch: ArchConfig) -> type:
    """The residual structure a declared ``block`` choice plugs in, else the sequential one; two are refused."""
    check_one_residual(arch)
    plugged = hook_classes(arch, "block")
    return plugged[0] if plugged else SequentialResidual


BRANCHES = ("attn", "ffn")


def branch_classes(arch: ArchConfig, branch: str) -> list[type]:
    """The ``branch`` hook's classes for one branch's output: each class says which in ``branches`` (default both:
    Gemma-2's post-norms; NormFormer's post-attention norm would say ``("attn",)``)."""
    return [cls for cls in hook_classes(arch, "branch") if branch in traits(cls).branches]


def through(modules: nn.ModuleList, y: torch.Tensor) -> torch.Tensor:
    """``y`` through each of ``modules`` in turn."""
    for module in modules:
        y = module(y)
    return y


# The attribute of a Block holding each owned hook's module that runs on the hidden states alone (the first norm,
# where the block has two): what a choice's component alone is (``ablations.measure.components_alone``). Attention
# takes the block's rotation and cache too, so it is timed in the block only.
HOOK_MODULES = {"norm": "norm1", "ffn": "ffn"}


class Block(nn.Module):
    """Norms, attention and the FFN, each chosen by name in ``arch``, joined to the residual by ``residual_of``."""

    def __init__(self, arch: ArchConfig, layer: int = 0) -> None:
        super().__init__()
        self.residual = residual_of(arch)
        # Registered in this order (norm1, attn, norm2, ffn): init without common random numbers draws from one
        # stream in registration order, so the order fixes the weights each seed gives. A residual decides where its
        # norms go (before each branch, after it, after the add); one may take none.
        norms = self.residual.norms(arch)
        if norms > 0:
            self.norm1 = build_norm(arch.norm.name, arch.model.d_model, arch.norm.eps)
        self.attn = build_attention(arch, layer)
        if norms > 1:
            self.norm2 = build_norm(arch.norm.name, arch.model.d_model, arch.norm.eps)
        self.ffn = build_ffn(arch)
        # After the FFN, so every module before keeps its init draws; only when a ``branch`` choice builds one.
        self.branch_outputs = bool(hook_classes(arch, "branch"))
        if self.branch_outputs:
            self.attn_out = nn.ModuleList(cls(arch) for cls in branch_classes(arch, "attn"))
            self.ffn_out = nn.ModuleList(cls(arch) for cls in branch_classes(arch, "ffn"))

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        norm = NORMS.get(arch.norm.name).work(arch, step)
        attn, ffn = ATTENTIONS.get(arch.attn.name).work(arch, step), FFNS.get(arch.ffn.name).work(arch, step)
        residual = residual_of(arch)
        outputs = sum((cls.work(arch, step) for b in BRANCHES for cls in branch_classes(arch, b)), Work())
        return residual.norms(arch) * norm + attn + ffn + residual.work(arch, step) + outputs

    def forward(self, x: torch.Tensor, rotation: Rotation | None = None, cache: KVCache | None = None,
                score_bias: ScoreBias | None = None) -> torch.Tensor:
        if self.branch_outputs:  # each branch's output through its ``branch`` modules before it joins the residual
            def attend(h: torch.Tensor) -> torch.Tensor:
                return through(self.attn_out, self.attn(h, rotation, cache, score_bias))

            return self.residual.forward(self, x, attend, lambda h: through(self.ffn_out, self.ffn(h)))
        return self.residual.forward(self, x, lambda h: self.attn(h, rotation, cache, score_bias), self.ffn)
