"""The one-choice flips of a block, each named as a variant's label names it: GPT-2's block with each flip and all of
Llama-2's choices (``flips_of``), the same at a full model size (``flips_at_size``: the predictor's and the report's
predicted columns), and the labels of the points that flip one choice (``flip_labels``)."""

from __future__ import annotations

from dataclasses import replace

from ablations.config.columns import name_in
from ablations.results.variant_labels import variant_label
from blockbench import Choice, choices
from components import PRESETS, ArchConfig, ModelConfig, llama2_block, llama2_model
from components import preset as make_preset
from components.flip_configs import flip_config, llama2_at_size, llama_like_kv_heads


def flip_labels(choice: Choice, key: str) -> list[str]:
    """The variant labels that move ``c`` alone to ``key`` (a value, or one of its ``setting_flips``): on Llama-2's
    block first where ``+sweep=modern`` flips it there (a value that came after Llama-2, or a setting), then on
    GPT-2's block."""
    model = ModelConfig(n_heads=16)
    kv_heads = llama_like_kv_heads(model.n_heads)

    def moved(arch: ArchConfig) -> ArchConfig:
        if key in choice.setting_flips:
            return arch.replace(**{choice.group: replace(getattr(arch, choice.group), **choice.setting_flips[key])})
        return arch.replace(**{choice.group: flip_config(choice, key, kv_heads, arch)})

    out = [variant_label(moved(ArchConfig(model=model)))]
    if key in choice.setting_flips or key in choice.after_llama2:
        llama = llama2_block(llama2_model(model), kv_heads)
        out.insert(0, variant_label(moved(llama)))
    return out


def flips_of(base: ArchConfig, kv_heads: int, published: ArchConfig | None = None) -> dict[str, ArchConfig]:
    """GPT-2's block ``base``, each one-choice flip of it (every declared ``Choice.flips`` value, named as a
    variant label names it: ``rope``, ``gqa8``, ``nobias``) and ``llama2``: every choice Llama-2 moved at once.

    A flip at the size of a ``published`` preset keeps the preset's settings of its group (``flip_config``:
    Llama-2-70B's FFN rule); GQA without its own KV heads gets ``kv_heads``. ``llama2`` is ``llama2_at_size``.
    """
    out = {"gpt2": base}
    for choice in choices():
        for value in choice.flips:
            flipped = base.replace(**{choice.group: flip_config(choice, value, kv_heads, published)})
            out[name_in(choice, flipped)] = flipped
    out["llama2"] = llama2_at_size(base.model, kv_heads, published)
    return out


# --- the flips at a full model size (the predictor's and the report's predicted columns) -----------------------


def preset_of(model_name: str) -> ArchConfig | None:
    """The published preset a model yaml names (``llama2_7b`` -> ``llama2-7b``), or None."""
    name = model_name.replace("_", "-")
    return make_preset(name) if name in PRESETS else None


def gqa_heads_at(model: ModelConfig, gqa_kv_heads: int) -> int:
    """The KV heads a GQA flip gets at ``model``'s size: the yaml's number where it groups the heads, else Llama-2-70B's
    group of query heads per KV head."""
    heads = model.n_heads
    ok = 1 <= gqa_kv_heads < heads and heads % gqa_kv_heads == 0
    return gqa_kv_heads if ok else llama_like_kv_heads(heads)


def sizes_of(model_name: str) -> ArchConfig | None:
    """The settings of a published preset a flip keeps: its FFN rule. Its positions' settings (RoPE's layout) change
    no count; its attention is reset, since its KV heads are the model yaml's ``gqa_kv_heads`` (the same number)
    and its other settings (Mistral's window) are a flip of their own, not part of every flip at its size."""
    published = preset_of(model_name)
    if published is None:
        return None
    return published.replace(pos=type(published.pos)(), attn=type(published.attn)())


def flips_at_size(model: ModelConfig, gqa_kv_heads: int, model_name: str) -> dict[str, ArchConfig]:
    """Baseline, each one-choice flip, and all of Llama-2's choices, at the sizes of ``model``."""
    return flips_of(ArchConfig(model=model), gqa_heads_at(model, gqa_kv_heads), sizes_of(model_name))
