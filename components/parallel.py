"""The parallel block: attention and the FFN both read the block's input and add to the residual side by side.

GPT-2 and Llama-2 run them in series, ``x = x + attn(norm1(x))`` then ``x + ffn(norm2(x))``, so the FFN sees what
attention wrote. GPT-J (Wang & Komatsuzaki 2021) and PaLM (Chowdhery et al. 2022, §2 "Parallel Layers") compute
``x + attn(norm(x)) + ffn(norm(x))`` with one shared norm (``shared_norm=True``); GPT-NeoX-20B (Black et al. 2022,
§2; HF ``use_parallel_residual=True``) computes ``x + attn(norm1(x)) + ffn(norm2(x))`` with two, which its paper
calls an oversight against GPT-J's tied norm. Why: the two branches no longer wait on each other, so their input
projections can be fused into one matrix product (PaLM: roughly 15% faster training at large scales), at a small
quality cost at 8B and none measured at 62B.

``block=sequential`` builds nothing, so ``Block`` keeps its own ``SequentialResidual``: the same modules and init draws
as a block without this choice. With a shared norm the block has no ``norm2``: one norm's parameters fewer per layer,
and ``Block.work`` counts one norm pass fewer through ``norms``. This harness runs the two branches one after the other
and does not fuse their matrices: it measures the structure, not PaLM's fused kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from components.choice import Choice, Claim
from components.config import ConfigError
from components.declarations import declare
from components.registry import Registry
from components.work import Step, Work

if TYPE_CHECKING:
    from components.block import Block, Branch
    from components.config import ArchConfig

BLOCKS: Registry[type | None] = Registry("block.name")
BLOCKS.add("sequential", None)  # builds nothing: ``Block`` uses its ``SequentialResidual``


@dataclass
class BlockConfig:
    name: str = "sequential"  # sequential | parallel
    # parallel only: one norm feeding both branches (GPT-J, PaLM), else one each (GPT-NeoX).
    shared_norm: bool = True

    def check(self, arch: ArchConfig) -> None:
        # A YAML ``shared_norm: "false"`` would otherwise be a truthy string and silently pick the shared norm.
        if not isinstance(self.shared_norm, bool):
            raise ConfigError(f"block.shared_norm={self.shared_norm!r} must be true or false")


@BLOCKS.register("parallel")
class ParallelResidual:
    """``x + attn(norm1(x)) + ffn(norm1(x))`` (shared norm) or ``x + attn(norm1(x)) + ffn(norm2(x))`` (two)."""

    @staticmethod
    def norms(arch: ArchConfig) -> int:
        return 1 if arch.block.shared_norm else 2

    @staticmethod
    def forward(block: Block, x: torch.Tensor, attend: Branch, feed: Branch) -> torch.Tensor:
        h = block.norm1(x)
        # ``Block`` builds ``norm2`` only when ``norms`` asks for two, so its presence says which form this is.
        ffn_in = block.norm2(x) if hasattr(block, "norm2") else h
        return x + attend(h) + feed(ffn_in)

    @staticmethod
    def work(arch: ArchConfig, step: Step) -> Work:
        """The residual adds are elementwise (not counted); ``Block.work`` counts the norms through ``norms``."""
        return Work()


BLOCK = declare(Choice(
    group="block", config=BlockConfig, registry=BLOCKS, hook="block", order=70, title="residual",
    display={"sequential": "sequential", "parallel": "parallel"},
    about={"sequential": "attention, then the FFN on the residual it updated",
           "parallel": "attention and the FFN reading the same input side by side, summed (GPT-J, PaLM: one shared "
                       "norm; GPT-NeoX: `block.shared_norm=false`)"},
    claim=Claim(
        "The parallel block trains faster at large scale with little quality cost",
        (("Chowdhery et al. 2022 (PaLM), §2",
          "roughly 15% faster training speed at large scales; ablations: small quality degradation at 8B, none at "
          "62B (no loss figure)"),
         ("Wang & Komatsuzaki 2021 (GPT-J-6B)", "attention and feed-forward in parallel, one shared LayerNorm; "
          "not ablated"),
         ("Black et al. 2022 (GPT-NeoX-20B), §2",
          "parallel attention and FFN with two LayerNorms, for throughput; not ablated")),
    ),
))
