"""``python -m ablations.predict.full_size``: the README's "At full size" tables, predicted, in one command.

Three tables, every number predicted (the roofline model of ``ablations.roofline`` on datasheet ceilings and
published efficiencies), bf16, LM head included:

1. **GPT-2's block, one choice at a time**: Llama-2-7B and 70B on one H100 SXM (``conf/hardware/h100_sxm.yaml``),
   context 4096: each flip's predicted time as a ratio to the GPT-2 baseline at the same size, decode at batch 1
   and 64 and a training step of 4096 tokens, with what bounds it; † where weights and KV cache exceed one device's
   memory. Its rows are every declared ``Choice.flips`` value.
2. **What came after Llama-2, on Llama-2's block**: at Llama-2-7B and 70B, each ``Choice.after_llama2`` value and
   each ``Choice.setting_flips`` entry (at its full-size value: the window is Mistral-7B's 4096) against Llama-2's
   block at the same size; at Mistral-7B's sizes only what makes Llama-2's block into Mistral-7B (its window), so
   that row *is* Mistral-7B against itself without the window. Decode at batch 1 and 64, contexts 4096 and 32768
   on one H100 SXM: Llama-2 was published at 4096 tokens, so its 32768 columns raise ``model.max_seq_len`` for the
   prediction (a counterfactual context, said under the table).
3. **Memory**: the KV cache per token and per sequence at each context, and the largest batch whose cache fits
   beside the weights on one H100 SXM (80 GB) and one H200 (141 GB) at each context; training memory and
   activations are not modelled.

The same numbers as ``python -m ablations.predict model=... decode.contexts=[4096,32768] extend_context=true``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ablations.config.columns import name_in
from ablations.config.errors import command, prog
from ablations.predict.__main__ import extended, load, scenarios
from ablations.predict.scenarios import flips, full_size_settings, moved_from, predicted, preset_of
from ablations.predict.table import ELEMENT_BYTES, fmt_seconds, prediction_table
from ablations.report.flips import flip_name
from ablations.report.formatting import fmt_bytes, fmt_count, markdown_table
from ablations.roofline.hardware import Hardware
from ablations.roofline.work import kv_bytes_per_token, kv_cache_bytes, largest_batch
from components import ArchConfig, Choice, ModelConfig, choices
from components.mla import mla_sizes

MODELS = ("llama2_7b", "llama2_70b")
# Table 2's models. A model in OWN_FLIPS_ONLY shows only the flips that make Llama-2's block at its sizes into the
# published model (Mistral-7B: the window); every other flip there would repeat Llama-2-7B's at nearly its sizes.
AFTER_LLAMA2_MODELS = ("llama2_7b", "llama2_70b", "mistral_7b")
OWN_FLIPS_ONLY = ("mistral_7b",)
SHOWN = {"llama2_7b": "Llama-2-7B", "llama2_70b": "Llama-2-70B", "mistral_7b": "Mistral-7B"}
BATCHES = (1, 64)
CONTEXTS = (4096, 32768)
MEMORY_HARDWARE = ("h100_sxm", "h200")


def row_labels(flipped: dict[str, ArchConfig]) -> dict[str, str]:
    """Each flip's row label (``LayerNorm → RMSNorm``, ``ablations.report.flips.flip_name``), keyed by the
    variant name the predictor gave it."""
    labels = {name: flip_name(name, arch) for name, arch in flipped.items()}
    return {name: label for name, label in labels.items() if label is not None}


def ratios(model: str, hardware: str = "h100_sxm") -> tuple[pd.DataFrame, Hardware, dict[str, str]]:
    """The predictions at one model size, and each flip's row label."""
    cfg = load([f"model={model}", f"hardware={hardware}", "decode.batches=[1,64]"])
    hw = Hardware.from_dict(dict(cfg.hardware))
    sizes = dict(cfg.model)
    kv = int(sizes.pop("gqa_kv_heads"))
    flipped = flips(ModelConfig(**sizes), kv, model)
    table = prediction_table(flipped, hw, [s for s in scenarios(cfg) if s.mode != "prefill"], str(cfg.dtype),
                             int(cfg.fit_context))
    return table, hw, row_labels(flipped)


def full_size_table(hardware: str = "h100_sxm") -> tuple[str, Hardware]:
    """Table 1: GPT-2's block and each one-choice flip of it, at Llama-2-7B and 70B."""
    cells: dict[str, dict[str, str]] = {}
    for model in MODELS:
        table, hw, labels = ratios(model, hardware)
        for _, r in table.iterrows():
            variant = str(r["variant"])
            if variant not in labels:
                continue
            # A flip whose name carries a size (gqa8) names it in the cell: the sizes differ between models.
            name = variant if any(ch.isdigit() for ch in variant) and variant != "llama2" else ""
            column = f"{model.replace('llama2_', '').upper()} {r['scenario'].replace(', context 4,096', '')}"
            fits = " †" if r["fits"] is False else ""
            cells.setdefault(labels[variant], {})[column] = (f"{r['ratio']:.2f}× ({r['bound']})"
                                                             + (f" [{name}]" if name else "") + fits)
    frame = pd.DataFrame.from_dict(cells, orient="index")
    frame.insert(0, "choice (predicted)", frame.index)
    return markdown_table(frame.reset_index(drop=True)), hw


# --- on Llama-2's block ----------------------------------------------------------------------------------------


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


def flip_label(c: Choice, value: str, settings: dict[str, Any], model: str, own: bool) -> str:
    """``RoPE → ALiBi`` for a value that came after Llama-2; ``attn.window: none → 4096`` for a named setting; and
    ``(= Mistral-7B)`` where the flip makes Llama-2's block into the model whose sizes these are."""
    if settings:
        default = c.config()
        text = ", ".join(f"{c.group}.{k}: {getattr(default, k) if getattr(default, k) is not None else 'none'} → {v}"
                         for k, v in settings.items())
    else:
        text = f"{c.shown(c.llama2)} → {c.shown(value)}"
    return text + (f" (= {SHOWN.get(model, model)})" if own else "")


def is_own(moved: tuple[Choice, str, dict[str, Any]], model: str) -> bool:
    """Whether a flip on Llama-2's block sets what the published preset of ``model`` has (Mistral-7B's window): the
    value, and every setting that differs from Llama-2's block, are the preset's own."""
    published = preset_of(model)
    if published is None:
        return False
    c, value, settings = moved
    cfg = getattr(published, c.group)
    return cfg.name == value and all(getattr(cfg, k) == v for k, v in settings.items())


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
        c, value, settings = moved
        rows.append(Flip(name, arch, flip_label(c, value, settings, model, own), c, value, settings, own))
    variants = {r.variant: r.arch for r in rows}
    # Every row against Llama-2's block, the block itself included (1×: its own row shows its time).
    table = prediction_table(variants, hw, asked, str(cfg.dtype), int(cfg.fit_context),
                             dict.fromkeys(variants, "llama2"))
    return AtSize(model, table, rows, p.variants["gpt2"], published.max_seq_len, size.max_seq_len, str(cfg.dtype))


def _marks(row: Flip) -> str:
    """‡ on a counterfactual the notes spell out (MLA on a dense block)."""
    return " ‡" if row.choice is not None and (row.choice.group, row.value) in NOTES else ""


def _model_cell(s: AtSize) -> str:
    # § (not *, which opens a markdown list at the start of its note) marks a context past the published one.
    return SHOWN.get(s.model, s.model) + (" §" if s.predicted_context > s.published_context else "")


def after_llama2_table(sizes: list[AtSize]) -> str:
    """Table 2: decode time of Llama-2's block (absolute) and each flip on it (ratio), with what bounds it."""
    out = []
    for s in sizes:
        for row in s.rows:
            cells = {"model": _model_cell(s), "on Llama-2's block (predicted)": row.label + _marks(row)}
            for ctx in CONTEXTS:
                for b in BATCHES:
                    r = s.table[(s.table.variant == row.variant) & (s.table.batch == b)
                                & (s.table.context == ctx)].iloc[0]
                    value = (fmt_seconds(r["seconds"]) if row.choice is None else f"{r['ratio']:.2f}×")
                    # ``fits`` is numpy's bool here (a column of decode rows alone), never the object ``False``.
                    fits = " †" if r["fits"] is not None and not pd.isna(r["fits"]) and not r["fits"] else ""
                    cells[f"decode, batch {b}, context {ctx:,}"] = f"{value} ({r['bound']}){fits}"
            out.append(cells)
    return markdown_table(pd.DataFrame(out))


def memory_table(sizes: list[AtSize]) -> str:
    """Table 3: per token and per sequence KV cache, and the largest batch on one H100 SXM and one H200, for GPT-2's
    block (MHA), Llama-2's, and each flip whose cache differs from Llama-2's."""
    devices = [device(h) for h in MEMORY_HARDWARE]
    out = []
    for s in sizes:
        elem = ELEMENT_BYTES[s.dtype]
        llama = s.rows[0].arch
        mha = kv_bytes_per_token(s.gpt2, elem)
        base = kv_bytes_per_token(llama, elem)
        gpt2 = Flip("gpt2", s.gpt2, "GPT-2 block (MHA)", None, None, {}, False)
        for row in [gpt2, *s.rows]:
            arch = row.arch
            differs = any(kv_cache_bytes(arch, 1, c, elem) != kv_cache_bytes(llama, 1, c, elem) for c in CONTEXTS)
            if row.choice is not None and not differs and not row.own:
                continue
            per_token = kv_bytes_per_token(arch, elem)
            cells = {"model": _model_cell(s), "block (predicted)": f"{row.label}{_marks(row)} [{_attention(arch)}]",
                     "KV cache / token": f"{fmt_bytes(per_token)} ({per_token / mha:.3g}× MHA, "
                                         f"{per_token / base:.3g}× Llama-2's)"}
            for ctx in CONTEXTS:
                cells[f"KV cache / sequence at {ctx:,}"] = fmt_bytes(kv_cache_bytes(arch, 1, ctx, elem))
            for hw in devices:
                for ctx in CONTEXTS:
                    cells[f"largest batch, {hw.name} ({hw.memory_bytes / 1e9:.0f} GB), {ctx:,}"] = fmt_count(
                        largest_batch(arch, ctx, elem, hw.memory_bytes))
            out.append(cells)
    return markdown_table(pd.DataFrame(out))


def device(name: str) -> Hardware:
    """A ``conf/hardware`` entry as the predictor composes it (Hydra reads ``80.0e9`` as a number; plain YAML 1.1
    would read it as text)."""
    return Hardware.from_dict(dict(load([f"hardware={name}"]).hardware))


def _attention(arch: ArchConfig) -> str:
    """The attention as variant labels name it (``mha``, ``gqa4``, ``mla``, ``gqa8-w4096``): what sizes the cache."""
    c = next(c for c in choices() if c.hook == "attention")
    return name_in(c, arch)


def _mla_note(rows: list[tuple[AtSize, Flip]]) -> str:
    """MLA's note: the counterfactual it is, and its sizes at each model, read from the rows' own configs."""
    sizes = []
    for s, r in rows:
        m = mla_sizes(r.arch.attn, r.arch.head_dim)
        sizes.append(f"{SHOWN.get(s.model, s.model)}: kv_lora_rank {m.kv_lora_rank} + RoPE key {m.rope_dim} at "
                     f"{m.head_dim} per head")
    return ("‡ MLA is a counterfactual here: DeepSeek-V2's multi-head latent attention (arXiv 2405.04434, §2.1; its "
            "config: kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128) on Llama-2's "
            f"dense block, in DeepSeek-V2's latent proportions ({'; '.join(dict.fromkeys(sizes))}), so the cache "
            "holds that latent and key per token and layer. DeepSeek's own models are mixtures of experts, which "
            "this harness does not model.")


# Notes under tables 2 and 3 for a flip that needs one, keyed by (group, value); printed only when its row is shown.
NOTES = {("attn", "mla"): _mla_note}


def notes(sizes: list[AtSize]) -> list[str]:
    """The footnotes tables 2 and 3 need: the raised context, each full-size setting's source, and ``NOTES``."""
    out = []
    raised = [s for s in sizes if s.predicted_context > s.published_context]
    if raised:
        names = ", ".join(SHOWN.get(s.model, s.model) for s in raised)
        contexts = ", ".join(sorted({f"{s.published_context:,}" for s in raised}))
        out.append(f"§ {names}: published at {contexts} tokens; the {CONTEXTS[-1]:,}-token columns are predicted with "
                   f"model.max_seq_len raised to {CONTEXTS[-1]:,} (extend_context=true), a counterfactual context "
                   "for a model not trained that long.")
    seen: set[str] = set()
    for s in sizes:
        for row in s.rows:
            if not row.settings or row.choice is None:
                continue
            c = row.choice
            said = ", ".join(f"{c.group}.{k}={v}" for k, v in row.settings.items())
            # Where a full-size setting comes from: a declared setting flip's full-size value, else the published
            # model's own setting (Mistral-7B's window before attention declares it a setting flip).
            declared = [n for n in c.setting_flips if full_size_settings(c, n)[0] == row.settings]
            if said in seen or not (declared or row.own):
                continue
            seen.add(said)
            if declared:
                source = full_size_settings(c, declared[0])[1]
                shown = SHOWN.get(source.replace("-", "_"), source)
                where = (f"{shown}'s own (components/presets.py cites its published config)"
                         if source != "declared" else "the declared value (no published preset here has one)")
                small = ", ".join(f"{k}={v}" for k, v in c.setting_flips[declared[0]].items())
                out.append(f"{said} at full size: {where}; the harness's small model flips {small}.")
            else:
                out.append(f"{said}: {SHOWN.get(s.model, s.model)}'s own setting (components/presets.py cites its "
                           "published config); with it Llama-2's block at its sizes is the published model.")
    for key, note in NOTES.items():
        rows = [(s, r) for s in sizes for r in s.rows if r.choice is not None and (r.choice.group, r.value) == key]
        if rows:
            out.append(note(rows))
    return out


@command("full-size")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("full-size"), description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    parser.parse_args(argv)
    text, hw = full_size_table()
    sizes = [at_size(m) for m in AFTER_LLAMA2_MODELS]
    print(f"Predicted on {hw.name}: {hw.source}. Efficiencies: {hw.efficiency_source}.\n")
    print(text)
    print("\n† the weights and this batch's KV cache do not fit in one device's memory (predicted for the work "
          "alone); training memory is not modelled.")
    print(f"\nOn Llama-2's block (predicted, {hw.name}): Llama-2's block at each size, then each choice that came "
          "after it alone on it, as a ratio to that block's time; † as above.\n")
    print(after_llama2_table(sizes))
    print("\nKV cache and the largest batch whose cache fits beside the weights (predicted; bf16; activations and "
          "training memory not modelled; 0: the weights alone do not fit):\n")
    print(memory_table(sizes))
    print()
    print("\n\n".join(notes(sizes)))  # one paragraph each, where markdown renders them
    return 0


if __name__ == "__main__":
    sys.exit(main())
