"""Full-size figures without allocating: parameters, FLOPs per token and KV-cache bytes of published models.

Every number is computed: parameters by building the language model on the meta device and counting,
FLOPs from ``ablations.measure.flops`` (the same analytic count the tests check against ``FlopCounterMode``),
KV bytes from a meta-device ``KVCache`` of the model's own shape. ``blockbench sizes`` prints
the table; ``sizes_table()`` gives it to the report.

Conventions: FLOPs are forward matmul FLOPs (a multiply-add is 2) for one token attending to a full
context of ``max_seq_len`` keys, LM head included, embedding lookup free; training is about 3x that.
KV bytes are K and V over all layers at 2 bytes per element (fp16/bf16), batch 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Iterable

import pandas as pd
import torch

from ablations.config.columns import name_in
from ablations.config.errors import command, prog
from ablations.measure.flops import per_token_forward_flops
from ablations.report.flip_sets import flips_of
from ablations.report.formatting import (
    fmt_bytes,
    fmt_count,
    fmt_flops,
    fmt_ratio,
    fmt_signed,
    markdown_table,
    number_word,
)
from ablations.roofline.work import lm_params
from blockbench import choices, llama2_choices
from components import ArchConfig, new_cache
from components import preset as make_preset
from components.flip_configs import llama_like_kv_heads

PUBLISHED = ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "llama2-7b", "llama2-13b", "llama2-70b")
KV_DTYPE = torch.float16
FLOPS_CONVENTION = (
    "forward matmul FLOPs (multiply-add = 2) for one token attending to a full context of max_seq_len keys, "
    "LM head included, embedding lookup free; a training step costs about 3x"
)
KV_CONVENTION = "K and V over all layers, 2 bytes per element (fp16/bf16), batch 1"
GIB = 2**30

SIZE_COLUMNS = ["d_model", "n_layers", "n_heads", "n_kv_heads", "ffn_hidden", "context", "params", "params_delta",
                "flops_per_token", "flops_ratio", "kv_bytes_per_token", "kv_bytes_context", "kv_ratio"]
# What a model's choices are called where no group leaves GPT-2's value.
NONE_MOVED = "none"


def columns() -> list[str]:
    """The raw table's columns: the model, each declared group's value, the choices moved from GPT-2's, the sizes."""
    return ["model", "basis", "compared_to", *(choice.group for choice in choices()), "choices", *SIZE_COLUMNS]


# --- the numbers --------------------------------------------------------------------------------------

def count_params(arch: ArchConfig) -> int:
    """Exact parameters of the language model (tied head counted once), built on the meta device."""
    return lm_params(arch)


def flops_per_token(arch: ArchConfig) -> int:
    """Forward FLOPs of one token at a full context: the decoder stack plus the d x vocab LM head."""
    head = 2 * arch.model.d_model * arch.model.vocab_size
    return per_token_forward_flops(arch, arch.model.max_seq_len) + head


def kv_bytes_per_token(arch: ArchConfig) -> int:
    """KV-cache bytes one token adds, from a meta-device cache of the model's shape (no memory used)."""
    cache = new_cache(arch, batch_size=1, max_seq_len=1, dtype=KV_DTYPE, device="meta")
    return cache.nbytes


def kv_bytes_at(arch: ArchConfig, context: int) -> int:
    """KV-cache bytes one sequence holds at ``context`` tokens (a sliding window's rolling cache keeps only its
    window), from a meta-device cache."""
    return new_cache(arch, batch_size=1, max_seq_len=context, dtype=KV_DTYPE, device="meta").nbytes


# --- which models -------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Entry:
    model: str
    basis: str
    arch: ArchConfig
    compared_to: str = ""


def published() -> list[Entry]:
    return [Entry(name, "published preset", make_preset(name)) for name in PUBLISHED]


def counterfactuals() -> list[Entry]:
    """Llama-2-70B with MHA, and GPT-2 124M with each one-choice flip (``flips_of``) and with all of Llama-2's.

    Sizes, vocabulary and tied embeddings stay GPT-2's: only the named choice moves. SwiGLU uses the
    project's width rule (``FFNConfig`` default), which keeps its parameters near GELU's.
    """
    llama = make_preset("llama2-70b")
    mha = llama.replace(attn=type(llama.attn)("mha"))
    gpt2 = make_preset("gpt2")
    flips = flips_of(gpt2, llama_like_kv_heads(gpt2.model.n_heads))
    entries = [Entry("llama2-70b MHA", "counterfactual: 64 KV heads instead of 8", mha, "llama2-70b")]
    for name, arch in flips.items():
        if name in ("gpt2", "llama2"):
            continue
        moved = next(choice for choice in choices() if not choice.has(arch, choice.gpt2))
        what = "one Llama-2 choice" if moved.in_llama2 else "one choice neither GPT-2 nor Llama-2 has"
        entries.append(Entry(f"gpt2 + {name}", f"counterfactual: {what}", arch, "gpt2"))
    entries.append(Entry(f"gpt2 + all {number_word(len(llama2_choices()))}",
                         "counterfactual: Llama-2 block at GPT-2 size (tied embeddings kept)", flips["llama2"], "gpt2"))
    return entries


# --- the table ----------------------------------------------------------------------------------------

def moved_from_gpt2(arch: ArchConfig) -> str:
    """Every declared choice ``arch`` has at a value other than GPT-2's, as a variant label names it (``rope``,
    ``gqa8``, ``nobias``), in declaration order."""
    return ", ".join(name_in(choice, arch) for choice in choices() if not choice.has(arch, choice.gpt2)) or NONE_MOVED


def row(entry: Entry) -> dict:
    a = entry.arch
    per_token = kv_bytes_per_token(a)
    return {
        "model": entry.model, "basis": entry.basis, "compared_to": entry.compared_to,
        **{choice.group: getattr(a, choice.group).name for choice in choices()}, "choices": moved_from_gpt2(a),
        "d_model": a.model.d_model, "n_layers": a.model.n_layers, "n_heads": a.model.n_heads,
        "n_kv_heads": a.n_kv_heads, "ffn_hidden": a.ffn_hidden, "context": a.model.max_seq_len,
        "params": count_params(a), "flops_per_token": flops_per_token(a),
        "kv_bytes_per_token": per_token, "kv_bytes_context": kv_bytes_at(a, a.model.max_seq_len),
    }


def sizes_table(entries: Iterable[Entry] | None = None) -> pd.DataFrame:
    """Published presets and counterfactuals, one row each; deltas and ratios against ``compared_to``."""
    if entries is None:
        return _default_table().copy()
    return _table(list(entries))


@functools.cache
def _default_table() -> pd.DataFrame:
    # Built once per process: a sweep's report and the claims both read it, and it never changes.
    return _table(published() + counterfactuals())


def _table(entries: list[Entry]) -> pd.DataFrame:
    table = pd.DataFrame([row(e) for e in entries])
    ref = table.set_index("model")
    has_ref = table["compared_to"].isin(ref.index)
    cmp = table["compared_to"].where(has_ref)
    table["params_delta"] = table["params"] - cmp.map(ref["params"])
    table["flops_ratio"] = table["flops_per_token"] / cmp.map(ref["flops_per_token"])
    table["kv_ratio"] = table["kv_bytes_per_token"] / cmp.map(ref["kv_bytes_per_token"])
    return table[columns()]


def kv_70b(table: pd.DataFrame | None = None) -> dict[str, float]:
    """Llama-2-70B's KV cache at full context, GQA-8 against its MHA counterfactual (GiB and ratio)."""
    table = sizes_table([e for e in published() + counterfactuals() if e.model.startswith("llama2-70b")]) \
        if table is None else table
    by = table.set_index("model")["kv_bytes_context"]
    gqa, mha = by["llama2-70b"], by["llama2-70b MHA"]
    ref = table.set_index("model").loc["llama2-70b"]
    return {"context": int(ref["context"]), "kv_heads": int(ref["n_kv_heads"]),
            "gqa_gib": gqa / GIB, "mha_gib": mha / GIB, "ratio": mha / gqa}


def formatted(table: pd.DataFrame) -> pd.DataFrame:
    """The sizes table with readable units, for printing and the report."""
    return pd.DataFrame({
        "model": table["model"],
        "choices not GPT-2's": table["choices"],
        "heads (q/kv)": table["n_heads"].astype(str) + "/" + table["n_kv_heads"].astype(str),
        "d / layers / ffn": table["d_model"].astype(str) + " / " + table["n_layers"].astype(str) + " / "
        + table["ffn_hidden"].astype(str),
        "context": table["context"].map(fmt_count),
        "parameters": table["params"].map(fmt_count),
        "Δ params": table["params_delta"].map(fmt_signed),
        "FLOPs/token": table["flops_per_token"].map(fmt_flops),
        "FLOPs ×": table["flops_ratio"].map(fmt_ratio),
        "KV/token": table["kv_bytes_per_token"].map(fmt_bytes),
        "KV at context": table["kv_bytes_context"].map(fmt_bytes),
        "KV ×": table["kv_ratio"].map(fmt_ratio),
    })


def sizes_markdown(table: pd.DataFrame | None = None) -> str:
    """Both tables and the 70B headline, as markdown (printed by the CLI, included in REPORT.md)."""
    table = sizes_table() if table is None else table
    pub = table["basis"] == "published preset"
    kv = kv_70b(table)
    return "\n".join([
        f"FLOPs/token: {FLOPS_CONVENTION}. KV: {KV_CONVENTION}. Parameters: exact, tied embeddings counted once.",
        "",
        markdown_table(formatted(table[pub])),
        "",
        "Counterfactuals (Δ and × against the model in brackets):",
        "",
        markdown_table(formatted(table[~pub]).assign(model=table[~pub]["model"] + " [" + table[~pub]["compared_to"]
                                                     + "]")),
        "",
        f"Llama-2-70B KV cache at {kv['context']:,} tokens (fp16): MHA {kv['mha_gib']:.3g} GiB, "
        f"GQA-{kv['kv_heads']} {kv['gqa_gib']:.3g} GiB: {kv['ratio']:.3g}× smaller.",
    ])


@command("sizes")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("sizes"),
        description="Parameters, FLOPs per token and KV-cache bytes of GPT-2 and Llama-2, computed on the meta "
                    "device (no memory), with counterfactuals (Llama-2-70B with MHA, GPT-2 with each Llama-2 choice).",
    )
    parser.add_argument("--csv", action="store_true", help="print the raw numbers as CSV instead of markdown")
    args = parser.parse_args(argv)
    table = sizes_table()
    print(table.to_csv(index=False) if args.csv else sizes_markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
