"""Tables 2 and 3's rows: Llama-2's block at a full model size and each choice that came after it, alone on it
(``Choice.after_llama2`` values and ``Choice.setting_flips`` entries at their full-size values), predicted at decode
batch 1 and 64 and each context; at Mistral-7B's sizes only what makes Llama-2's block into Mistral-7B (its window)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ablations.predict.__main__ import extended, load, scenarios
from ablations.predict.scenarios import moved_from, predicted, preset_of
from ablations.predict.table import prediction_table
from ablations.roofline.hardware import Hardware
from blockbench import Choice
from components import ArchConfig, ModelConfig

# Table 2's models. A model in OWN_FLIPS_ONLY shows only the flips that make Llama-2's block at its sizes into the
# published model (Mistral-7B: the window); every other flip there would repeat Llama-2-7B's at nearly its sizes.
AFTER_LLAMA2_MODELS = ("llama2_7b", "llama2_70b", "mistral_7b")
OWN_FLIPS_ONLY = ("mistral_7b",)
SHOWN = {"llama2_7b": "Llama-2-7B", "llama2_70b": "Llama-2-70B", "mistral_7b": "Mistral-7B"}
BATCHES = (1, 64)
CONTEXTS = (4096, 32768)


@dataclass(frozen=True)
class Flip:
    """One row of tables 2 and 3: a variant at one model size and what it moves from Llama-2's block there."""

    variant: str
    arch: ArchConfig
    label: str
    choice: Choice | None  # None: a baseline block (GPT-2's or Llama-2's)
    value: str | None
    settings: dict[str, Any]  # the settings a setting flip changes (empty for a value)
    own: bool  # the flip makes Llama-2's block into this size's published model (Mistral-7B's window)


@dataclass(frozen=True)
class AtSize:
    """Tables 2 and 3 at one model size: the predictions, the rows, and the context the prediction raised."""

    model: str
    table: pd.DataFrame
    rows: list[Flip]
    gpt2: ArchConfig
    published_context: int
    predicted_context: int
    dtype: str


def flip_label(choice: Choice, value: str, settings: dict[str, Any], model: str, own: bool) -> str:
    """``RoPE → ALiBi`` for a value that came after Llama-2; ``attn.window: none → 4096`` for a named setting; and
    ``(= Mistral-7B)`` where the flip makes Llama-2's block into the model whose sizes these are."""
    if settings:
        default = choice.config()
        text = ", ".join(
            f"{choice.group}.{k}: {getattr(default, k) if getattr(default, k) is not None else 'none'} → {v}"
            for k, v in settings.items())
    else:
        text = f"{choice.shown(choice.llama2)} → {choice.shown(value)}"
    return text + (f" (= {SHOWN.get(model, model)})" if own else "")


def is_own(moved: tuple[Choice, str, dict[str, Any]], model: str) -> bool:
    """Whether a flip on Llama-2's block sets what the published preset of ``model`` has (Mistral-7B's window): the
    value, and every setting that differs from Llama-2's block, are the preset's own."""
    published = preset_of(model)
    if published is None:
        return False
    choice, value, settings = moved
    group_config = getattr(published, choice.group)
    return group_config.name == value and all(getattr(group_config, k) == v for k, v in settings.items())


def at_size(model: str, hardware: str = "h100_sxm") -> AtSize:
    """Llama-2's block at ``model``'s sizes and each flip on it, predicted at decode batch 1 and 64 and each of
    ``CONTEXTS`` (``model.max_seq_len`` raised where a context passes it: ``extend_context``)."""
    batches = ",".join(map(str, BATCHES))
    contexts = ",".join(map(str, CONTEXTS))
    cfg = load([f"model={model}", f"hardware={hardware}", f"decode.batches=[{batches}]",
                f"decode.contexts=[{contexts}]", "extend_context=true"])
    hw = Hardware.from_dict(dict(cfg.hardware))
    sizes = dict(cfg.model)
    kv = int(sizes.pop("gqa_kv_heads"))
    asked = [s for s in scenarios(cfg) if s.mode == "decode"]
    published = ModelConfig(**sizes)
    size, _ = extended(cfg, published, asked)
    p = predicted(size, kv, model)
    llama = p.variants["llama2"]
    rows = [Flip("llama2", llama, "Llama-2 block (baseline)", None, None, {}, False)]
    for name, arch in p.variants.items():
        if p.against[name] != "llama2":
            continue
        moved = moved_from(arch, llama)
        if moved is None:
            raise ValueError(f"{name} moves more than one choice from Llama-2's block")
        own = is_own(moved, model)
        if model in OWN_FLIPS_ONLY and not own:
            continue
        choice, value, settings = moved
        rows.append(Flip(name, arch, flip_label(choice, value, settings, model, own), choice, value, settings, own))
    variants = {r.variant: r.arch for r in rows}
    # Every row against Llama-2's block, the block itself included (1×: its own row shows its time).
    table = prediction_table(variants, hw, asked, str(cfg.dtype), int(cfg.fit_context),
                             dict.fromkeys(variants, "llama2"))
    return AtSize(model, table, rows, p.variants["gpt2"], published.max_seq_len, size.max_seq_len, str(cfg.dtype))


def model_cell(s: AtSize) -> str:
    """How a row names its model; § marks a context past the published one (not *, which opens a markdown list at
    the start of its note)."""
    return SHOWN.get(s.model, s.model) + (" §" if s.predicted_context > s.published_context else "")
