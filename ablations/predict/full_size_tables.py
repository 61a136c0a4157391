"""The full-size tables, every number predicted (``ablations.predict.full_size`` prints them): GPT-2's block one
choice at a time at Llama-2-7B and 70B (table 1), each choice that came after Llama-2 on its block (table 2), and the
KV cache with the largest batch that fits (table 3)."""

from __future__ import annotations

import pandas as pd

from ablations.config.columns import name_in
from ablations.predict.__main__ import load, scenarios
from ablations.predict.after_llama2 import BATCHES, CONTEXTS, AtSize, Flip, model_cell
from ablations.predict.full_size_notes import marks
from ablations.predict.scenarios import flips
from ablations.predict.table import ELEMENT_BYTES, fmt_seconds, prediction_table
from ablations.report.flips import flip_name
from ablations.report.formatting import fmt_bytes, fmt_count, markdown_table
from ablations.roofline.hardware import Hardware
from ablations.roofline.work import kv_bytes_per_token, kv_cache_bytes, largest_batch
from blockbench import choices
from components import ArchConfig, ModelConfig

MODELS = ("llama2_7b", "llama2_70b")
MEMORY_HARDWARE = ("h100_sxm", "h200")


def row_labels(flipped: dict[str, ArchConfig]) -> dict[str, str]:
    """Each flip's row label (``LayerNorm → RMSNorm``, ``ablations.report.flips.flip_name``), keyed by the
    variant name the predictor gave it."""
    # every flip has the size's own embeddings: they are no change of the flip's
    labels = {name: flip_name(name, arch, embeddings=False) for name, arch in flipped.items()}
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


def after_llama2_table(sizes: list[AtSize]) -> str:
    """Table 2: decode time of Llama-2's block (absolute) and each flip on it (ratio), with what bounds it."""
    out = []
    for s in sizes:
        for row in s.rows:
            cells = {"model": model_cell(s), "on Llama-2's block (predicted)": row.label + marks(row)}
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
            differs = any(kv_cache_bytes(arch, 1, context, elem) != kv_cache_bytes(llama, 1, context, elem)
                          for context in CONTEXTS)
            if row.choice is not None and not differs and not row.own:
                continue
            per_token = kv_bytes_per_token(arch, elem)
            cells = {"model": model_cell(s), "block (predicted)": f"{row.label}{marks(row)} [{_attention(arch)}]",
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
    choice = next(choice for choice in choices() if choice.hook == "attn")
    return name_in(choice, arch)
