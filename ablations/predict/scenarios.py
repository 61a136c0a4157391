"""What is predicted: the one-choice flips of a model size, and the scenarios each is run in.

Two sets of flips at every size, each read from the declarations (``components.choice``), never listed here:

- **On GPT-2's block** (``flips``): the baseline is GPT-2's choices (learned positions, LayerNorm, GELU, MHA, linear
  biases) and each flip moves one choice to one of its ``Choice.flips`` values (a value added to a declaration
  appears here with no edit); ``llama2`` moves all five Llama-2 moved. Ratios are against ``gpt2``.
- **On Llama-2's block** (``llama2_flips``): that ``llama2`` block is the baseline, and each flip moves one choice to
  a value that came after Llama-2 (``Choice.after_llama2``: ALiBi, GeGLU, QK-norm, a parallel block, ...) or sets
  one of a choice's named settings (``Choice.setting_flips``: attention's sliding window). Ratios are against
  ``llama2`` (``against``).

Sizes, vocabulary and tied embeddings are the model's. Where the size is a published preset its FFN rule is the
preset's (7B: multiple_of 256; 70B: 4096 and 1.3; Mistral-7B: 14336 wide), and GQA gets ``gqa_kv_heads`` (the
model yaml's number: 70B's 8, Mistral's 8); a size whose preset has MHA (7B, 13B) gets Llama-2-70B's group of query
heads per KV head. A flip of a group takes the same config of it on either block, so e.g. GeGLU is as wide beside
GPT-2's choices as beside Llama-2's.

A named setting is declared at the small harness model's value (a window of 64 at its 1024 tokens); at full size it
takes the value of the published preset that has it (``full_size_settings``: Mistral-7B's window of 4096, from its
``config.json``), so a prediction carries a setting some model was actually built with. At a published model's own
sizes, the settings it has beyond Llama-2's block (``published_settings``: Mistral-7B's window) are a flip of their
own, so Llama-2's block at Mistral-7B's sizes is compared with Mistral-7B itself.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from ablations.report.flip_sets import flips_at_size as flips
from ablations.report.flip_sets import gqa_heads_at, preset_of, sizes_of
from ablations.results.variant_labels import variant_label
from blockbench import Choice, choices
from components import PRESETS, ArchConfig, ModelConfig
from components.flip_configs import flip_config, llama2_at_size


@dataclass(frozen=True)
class Scenario:
    mode: str  # prefill, decode or train (the roofline.work modes)
    batch: int
    seq: int  # prefill length, decode context, train sequence length

    @property
    def label(self) -> str:
        what = {"prefill": "prefill {seq}", "decode": "decode, context {seq}", "train": "train step {seq}"}
        return what[self.mode].format(seq=f"{self.seq:,}") + f", batch {self.batch}"


@dataclass(frozen=True)
class Predicted:
    """Every variant predicted at one size, and the block each one's ratio is against (``variants`` in order: GPT-2's
    block and its flips, ``llama2``, then the flips on Llama-2's block)."""

    variants: dict[str, ArchConfig]
    against: dict[str, str]


def full_size_settings(choice: Choice, name: str) -> tuple[dict[str, Any], str]:
    """The settings of ``choice``'s setting flip ``name`` at full size, and where they come from.

    The declaration gives them at the small harness model's size (``attn.window=64`` at 1024 tokens: a window that
    slides there); a full-size model with so short a window was never built. So at full size each takes the value of
    the first published preset (``components.presets``) that has all of them set: the window is Mistral-7B's 4096
    (its ``config.json``'s ``sliding_window``). With no such preset the declared values are used, and the source
    says so.
    """
    declared = choice.setting_flips[name]
    default = choice.config()
    for preset_name, make in PRESETS.items():
        group_config = getattr(make(), choice.group)
        if all(getattr(group_config, key) != getattr(default, key) for key in declared):
            return {key: getattr(group_config, key) for key in declared}, preset_name
    return dict(declared), "declared"


def llama2_flips(model: ModelConfig, gqa_kv_heads: int, model_name: str) -> dict[str, ArchConfig]:
    """Llama-2's block at the sizes of ``model`` (``llama2``, as ``flips`` has it), then each choice that came after
    it moved alone on it: every ``Choice.after_llama2`` value, then every ``Choice.setting_flips`` entry at its
    full-size value (``full_size_settings``). Each keyed by its variant label (``llama2-alibi``, ``llama2+qknorm``,
    ``llama2-gqa8-w4096``).

    A value takes the config its flip of GPT-2's block takes at this size (the preset's FFN rule for GeGLU; MLA at
    its defaults, which at 128 dims a head are DeepSeek-V2's ``kv_lora_rank`` 512 and ``qk_rope_head_dim`` 64).
    """
    kv = gqa_heads_at(model, gqa_kv_heads)
    sizes = sizes_of(model_name)
    llama = llama2_at_size(model, kv, sizes)
    out = {"llama2": llama}
    for choice in choices():
        for value in choice.after_llama2:
            flipped = llama.replace(**{choice.group: flip_config(choice, value, kv, sizes)})  # as on GPT-2's block
            out[variant_label(flipped)] = flipped
        for name in choice.setting_flips:
            settings, _ = full_size_settings(choice, name)
            flipped = llama.replace(**{choice.group: replace(getattr(llama, choice.group), **settings)})
            out[variant_label(flipped)] = flipped
    # The published model's own settings beyond Llama-2's block (Mistral-7B's window), whether or not a choice
    # declares them as a setting flip: with them, Llama-2's block at the preset's sizes is the published model.
    for choice, settings in published_settings(model_name):
        flipped = llama.replace(**{choice.group: replace(getattr(llama, choice.group), **settings)})
        out.setdefault(variant_label(flipped), flipped)
    return out


def published_settings(model_name: str) -> list[tuple[Choice, dict[str, Any]]]:
    """The settings a published preset sets that Llama-2's block does not have, per choice: its fields marked
    ``neutral`` (the settings added after Llama-2, whose default changes nothing: a window, MLA's sizes) that it sets
    away from their default. Mistral-7B: ``attn.window=4096``; a Llama-2 preset: none."""
    published = preset_of(model_name)
    if published is None:
        return []
    out = []
    for choice in choices():
        group_config = getattr(published, choice.group)
        settings = {f.name: getattr(group_config, f.name) for f in fields(group_config)
                    if f.metadata.get("neutral") and getattr(group_config, f.name) != f.default}
        if settings:
            out.append((choice, settings))
    return out


def predicted(model: ModelConfig, gqa_kv_heads: int, model_name: str) -> Predicted:
    """GPT-2's block and its flips (against ``gpt2``), Llama-2's block (against ``gpt2``: all five at once), and the
    flips on Llama-2's block (against ``llama2``)."""
    on_gpt2 = flips(model, gqa_kv_heads, model_name)
    on_llama2 = llama2_flips(model, gqa_kv_heads, model_name)
    clash = set(on_gpt2) & set(on_llama2) - {"llama2"}
    if clash:  # a label names what differs from GPT-2's block, so the two sets never share one
        raise ValueError(f"flips on GPT-2's and Llama-2's blocks share the names {sorted(clash)}")
    against = {name: "gpt2" for name in on_gpt2}
    against.update({name: "llama2" for name in on_llama2 if name != "llama2"})
    return Predicted({**on_gpt2, **on_llama2}, against)


def moved_from(arch: ArchConfig, base: ArchConfig) -> tuple[Choice, str, dict[str, Any]] | None:
    """The one choice ``arch`` moves from ``base``: the choice, its value in ``arch``, and the settings that differ
    when the value is the same (a setting flip); None when ``arch`` is ``base`` or moves more than one choice."""
    moved = [choice for choice in choices() if getattr(arch, choice.group) != getattr(base, choice.group)]
    if len(moved) != 1:
        return None
    choice = moved[0]
    group_config, ref = getattr(arch, choice.group), getattr(base, choice.group)
    settings = {} if group_config.name != ref.name else {k: v for k, v in vars(group_config).items()
                                                          if vars(ref).get(k) != v}
    return choice, group_config.name, settings
