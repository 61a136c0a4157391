"""The blocks a point is paired with (``baseline=gpt2|llama2``) at the point's sizes, and how many of the choices
Llama-2 moved a block has at Llama-2's value."""

from __future__ import annotations

from dataclasses import replace

from components.config import ArchConfig, ModelConfig
from components.declarations import llama2_choices
from components.presets import llama2_block, llama2_model

# The blocks a point can be paired with (``baseline=NAME``): GPT-2's and Llama-2's.
BASELINES = ("gpt2", "llama2")


def llama2_count(arch: ArchConfig) -> int:
    """How many of the choices Llama-2 moved are at Llama-2's value (0: the GPT-2 block; all: Llama-2's)."""
    return sum(choice.has(arch, choice.llama2) for choice in llama2_choices())


def baseline_of(arch: ArchConfig, name: str = "gpt2", kv_heads: int | None = None) -> ArchConfig:
    """The block ``arch`` is paired with, at its sizes: GPT-2's (every choice at its GPT-2 value, GPT-2's
    embeddings) or Llama-2's (every choice Llama-2 moved at its value, GQA with ``kv_heads`` KV heads, Llama-2's
    embeddings (``llama2_model``): what ``variant=llama2`` composes at the same size). Either is the block its name
    names (``variant_label``), so a quality arm trained as the baseline and the baseline point's rows are the same
    arm under the same name; the timed decoder has no embeddings, so the timing is the same either way."""
    if name == "gpt2":
        return ArchConfig(model=replace(arch.model, tie_embeddings=ModelConfig.tie_embeddings))
    if name != "llama2":
        raise ValueError(f"baseline {name!r} is not one of {BASELINES}")
    return llama2_block(llama2_model(arch.model), kv_heads or arch.n_kv_heads)
