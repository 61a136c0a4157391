"""The configs a one-choice flip takes at a model's size: a group's config sized for its KV heads with a published
preset's other settings (``flip_config``), Llama-2's block built the same way (``llama2_at_size``), and the KV heads
a GQA flip gets where none are given (``llama_like_kv_heads``: Llama-2-70B's group of query heads per KV head)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from components.choice import Choice
from components.config import ArchConfig, ModelConfig
from components.declarations import llama2_choices
from components.presets import llama2_block
from components.presets import preset as make_preset


def llama2_70b_group() -> int:
    """Query heads per KV head in Llama-2-70B (64 / 8), from its preset."""
    ref = make_preset("llama2-70b")
    return ref.model.n_heads // ref.n_kv_heads


def llama_like_kv_heads(n_heads: int) -> int:
    """KV heads for a GQA counterfactual: the divisor of ``n_heads`` whose group size (query heads per KV
    head) is closest to Llama-2-70B's; ties go to more KV heads (the milder change)."""
    group = llama2_70b_group()
    divisors = [k for k in range(1, n_heads + 1) if n_heads % k == 0 and k < n_heads]
    if not divisors:
        return n_heads
    return min(divisors, key=lambda k: (abs(n_heads // k - group), -k))


def flip_config(declared: Choice, value: str, kv_heads: int, settings_from: ArchConfig | None = None) -> Any:
    """The config of ``c``'s group that a flip to ``value`` takes: sized for ``kv_heads`` (``Choice.at_size``), with
    the group's other settings those of ``settings_from`` where given (a preset's: Llama-2-70B's FFN rule for any
    gated FFN; the block being flipped), else the defaults."""
    if settings_from is None:
        return declared.at_size(value, kv_heads)
    cfg = getattr(settings_from, declared.group)
    settings = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.init and f.name != "name"}
    return declared.at_size(value, kv_heads, **settings)


def llama2_at_size(model: ModelConfig, kv_heads: int, published: ArchConfig | None = None) -> ArchConfig:
    """Llama-2's block (``llama2_block``) on ``model``, each group it moved keeping the other settings ``published``
    has for it (``flip_config``: Llama-2-70B's FFN rule), as each one-choice flip at that size keeps them."""
    block = llama2_block(model, kv_heads)
    if published is None:
        return block
    moved = {declared.group: flip_config(declared, getattr(block, declared.group).name, kv_heads, published)
             for declared in llama2_choices()}
    return block.replace(**moved)
