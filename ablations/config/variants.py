"""What a point is: the model a composed config describes, its GPT-2 baseline, and its name.

Pure functions of the config and ``components``' dataclasses; the measurement and the quality runs both
build on them, so they sit below both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ablations.config.columns import config_from_row, name_in
from blockbench import Choice, Step, choices, llama2_choices
from components import (
    ATTENTIONS,
    FFNS,
    LLAMA2_TIES_EMBEDDINGS,
    PRESETS,
    ArchConfig,
    ConfigError,
    ModelConfig,
    llama2_block,
    llama2_model,
)
from components import preset as make_preset


def arch_from(cfg: DictConfig) -> ArchConfig:
    """The components' ``ArchConfig`` described by a composed run config: the sizes and every declared choice."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    model.pop("gqa_kv_heads", None)
    groups = {c.group: c.config(**OmegaConf.to_container(cfg[c.group], resolve=True)) for c in choices()}
    arch = ArchConfig(model=ModelConfig(**model), **groups)
    return match_params(arch) if cfg.get("match_params") else arch


def attention_weights_saved(arch: ArchConfig) -> int:
    """How many weights ``arch``'s attention has fewer than its MHA version (negative: more). GQA and MQA drop K/V
    heads; MLA replaces K and V with its down- and up-projections and widens each head's query by its RoPE part,
    which saves weights or costs them depending on the sizes. Both counts are the attention's own (its ``work``'s
    weights at one token), so a new attention value is counted by its own module."""
    def weights(a: ArchConfig) -> int:
        return ATTENTIONS.get(a.attn.name).work(a, Step(1, 1, 1)).weights

    return weights(arch.replace(attn=type(arch.attn)("mha"))) - weights(arch)


def match_params(arch: ArchConfig) -> ArchConfig:
    """Change the FFN's width by the attention weights ``attention_weights_saved`` counts, so the block has the
    parameters of its MHA version (to the nearest hidden unit), as Llama-2's GQA ablation did for GQA (Touvron et
    al. 2023, A.2.1): GQA and MQA widen the FFN; MLA widens it where its latent saves weights and narrows it where
    its projections cost more than MHA's (few, wide heads).

    What one more hidden unit costs the FFN is its own ``work``'s weights at one token.
    """
    arch.validate()
    saved = attention_weights_saved(arch)
    if saved == 0:
        return arch
    ffn = FFNS.get(arch.ffn.name)
    width = arch.ffn_hidden
    one = Step(1, 1, 1)
    at = [arch.replace(ffn=replace(arch.ffn, hidden_dim=h)) for h in (width, width + 1)]
    per_unit = ffn.work(at[1], one).weights - ffn.work(at[0], one).weights
    hidden = width + round(saved / per_unit)
    if hidden < 1:
        raise ConfigError(f"match_params=true cannot match attn={arch.attn.name}: its attention has {-saved} weights "
                          f"more than MHA's, more than the FFN's {width} hidden units hold; use match_params=false")
    return arch.replace(ffn=replace(arch.ffn, hidden_dim=hidden))


def arch_from_row(row: Mapping[str, Any], max_seq_len: int = 1 << 20) -> ArchConfig:
    """The architecture a result row describes: its sizes, every declared choice from its columns (GPT-2's value
    where a row predates the choice), and its FFN width as measured. A summary row without the depth or width
    (the quality statistics keep the heads) gets one layer of 64 dims a head: enough to name its choices."""
    heads = int(row["n_heads"])
    model = ModelConfig(d_model=int(row.get("d_model", 64 * heads)), n_layers=int(row.get("n_layers", 1)),
                        n_heads=heads, max_seq_len=max_seq_len)
    arch = ArchConfig(model=model, **{c.group: config_from_row(c, row) for c in choices()})
    hidden = row.get("ffn_hidden")
    if hidden is None or hidden != hidden:  # absent, or NaN
        return arch
    return arch.replace(ffn=replace(arch.ffn, hidden_dim=int(hidden)))


def llama2_count(arch: ArchConfig) -> int:
    """How many of the choices Llama-2 moved are at Llama-2's value (0: the GPT-2 block; all: Llama-2's)."""
    return sum(c.has(arch, c.llama2) for c in llama2_choices())


# The blocks a point can be paired with (``baseline=NAME``): GPT-2's and Llama-2's.
BASELINES = ("gpt2", "llama2")


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


def baseline_of_row(row: Mapping[str, Any], arch: ArchConfig) -> ArchConfig:
    """The block a result row's point was paired with (GPT-2's in a table without a ``baseline`` column)."""
    name, kv = row.get("baseline"), row.get("baseline_kv_heads")
    name = name if isinstance(name, str) else "gpt2"
    return baseline_of(arch, name, int(kv) if isinstance(kv, (int, float)) and kv == kv else None)


def baseline_from(cfg: DictConfig, arch: ArchConfig) -> ArchConfig:
    """The baseline a composed run config names (``baseline=gpt2|llama2``), at the point's sizes."""
    return baseline_of(arch, str(cfg.baseline.name), int(cfg.model.gqa_kv_heads))


# What a label adds where ``match_params`` widened the FFN to its MHA version's parameters (``gqa2-matched``).
MATCHED = "-matched"


def variant_label(arch: ArchConfig, matched: bool = False) -> str:
    """A name that says what differs from the GPT-2 baseline: ``gpt2``, ``rmsnorm``, ``gqa2``, ``nobias``,
    ``llama2``, ``rope+rmsnorm``.

    Every choice Llama-2 moved (``llama2_choices``) but one at Llama-2's value names the Llama-2 block and the odd
    one out, as its choice names it: ``llama2-learned``, ``llama2-gelu``, ``llama2-mha`` (or ``-mqa``),
    ``llama2-bias`` (the leave-one-out points). A choice neither model varies (``gpt2 == llama2``) adds its name
    when moved: ``llama2+qknorm``, ``rope+qknorm``. A block whose embeddings are not its family's (GPT-2's:
    ``ModelConfig``'s default; Llama-2's: ``LLAMA2_TIES_EMBEDDINGS``) says which it has: ``llama2-bias-tied``,
    ``gpt2-untied``. ``matched`` (``match_params``) adds ``MATCHED`` where it changed the FFN (attention of other
    weights than MHA's).
    """
    suffix = MATCHED if matched and attention_weights_saved(arch) != 0 else ""
    moved = llama2_choices()
    llama = {c.group: c.has(arch, c.llama2) for c in moved}
    family = sum(llama.values()) >= len(moved) - 1
    tied = arch.model.tie_embeddings
    if tied != (LLAMA2_TIES_EMBEDDINGS if family else ModelConfig.tie_embeddings):
        suffix = ("-tied" if tied else "-untied") + suffix
    extras = [name_in(c, arch) for c in choices() if not c.in_llama2 and not c.has(arch, c.gpt2)]
    if family:
        odd = [name_in(c, arch) for c in moved if not llama[c.group]]
        name = "-".join(["llama2", *odd])
        return "+".join([name, *extras]) + suffix
    changed = [name_in(c, arch) for c in choices() if not c.has(arch, c.gpt2)]
    return ("+".join(changed) if changed else "gpt2") + suffix


def flip_labels(c: Choice, key: str) -> list[str]:
    """The variant labels that move ``c`` alone to ``key`` (a value, or one of its ``setting_flips``): on Llama-2's
    block first where ``+sweep=modern`` flips it there (a value that came after Llama-2, or a setting), then on
    GPT-2's block."""
    model = ModelConfig(n_heads=16)
    kv_heads = llama_like_kv_heads(model.n_heads)

    def moved(arch: ArchConfig) -> ArchConfig:
        if key in c.setting_flips:
            return arch.replace(**{c.group: replace(getattr(arch, c.group), **c.setting_flips[key])})
        return arch.replace(**{c.group: flip_config(c, key, kv_heads, arch)})

    out = [variant_label(moved(ArchConfig(model=model)))]
    if key in c.setting_flips or key in c.after_llama2:
        llama = llama2_block(llama2_model(model), kv_heads)
        out.insert(0, variant_label(moved(llama)))
    return out


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


def flips_of(base: ArchConfig, kv_heads: int, published: ArchConfig | None = None) -> dict[str, ArchConfig]:
    """GPT-2's block ``base``, each one-choice flip of it (every declared ``Choice.flips`` value, named as a
    variant label names it: ``rope``, ``gqa8``, ``nobias``) and ``llama2``: every choice Llama-2 moved at once.

    A flip at the size of a ``published`` preset keeps the preset's settings of its group (``flip_config``:
    Llama-2-70B's FFN rule); GQA without its own KV heads gets ``kv_heads``. ``llama2`` is ``llama2_at_size``.
    """
    out = {"gpt2": base}
    for c in choices():
        for value in c.flips:
            flipped = base.replace(**{c.group: flip_config(c, value, kv_heads, published)})
            out[name_in(c, flipped)] = flipped
    out["llama2"] = llama2_at_size(base.model, kv_heads, published)
    return out


def flip_config(c: Choice, value: str, kv_heads: int, settings_from: ArchConfig | None = None) -> Any:
    """The config of ``c``'s group that a flip to ``value`` takes: sized for ``kv_heads`` (``Choice.at_size``), with
    the group's other settings those of ``settings_from`` where given (a preset's: Llama-2-70B's FFN rule for any
    gated FFN; the block being flipped), else the defaults."""
    if settings_from is None:
        return c.at_size(value, kv_heads)
    cfg = getattr(settings_from, c.group)
    settings = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.init and f.name != "name"}
    return c.at_size(value, kv_heads, **settings)


def llama2_at_size(model: ModelConfig, kv_heads: int, published: ArchConfig | None = None) -> ArchConfig:
    """Llama-2's block (``llama2_block``) on ``model``, each group it moved keeping the other settings ``published``
    has for it (``flip_config``: Llama-2-70B's FFN rule), as each one-choice flip at that size keeps them."""
    block = llama2_block(model, kv_heads)
    if published is None:
        return block
    moved = {c.group: flip_config(c, getattr(block, c.group).name, kv_heads, published) for c in llama2_choices()}
    return block.replace(**moved)


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
