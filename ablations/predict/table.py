"""Predicted time, its bound, KV-cache memory and the largest batch, per flip and scenario, on one machine."""

from __future__ import annotations

import pandas as pd

from ablations.predict.scenarios import Scenario
from ablations.report.formatting import fmt_bytes, fmt_count, markdown_table
from ablations.roofline.calls import kernel_calls
from ablations.roofline.hardware import Hardware
from ablations.roofline.model import predict
from ablations.roofline.work import kv_cache_bytes, largest_batch, mode_work
from components import ArchConfig

ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def prediction_table(variants: dict[str, ArchConfig], hw: Hardware, scenarios: list[Scenario], dtype: str,
                     fit_context: int) -> pd.DataFrame:
    """One row per scenario and variant; ``ratio`` is against ``gpt2`` in the same scenario. Weights, cache and
    activations in ``dtype``; the language model's head and embedding included."""
    elem = ELEMENT_BYTES[dtype]
    rows = []
    for sc in scenarios:
        for name, arch in variants.items():
            work = mode_work(arch, sc.mode, sc.batch, sc.seq, elem, lm_head=True)
            p = predict(work, hw, kernel_calls(arch, sc.mode))
            kv_tokens = sc.seq if sc.mode != "train" else 0
            rows.append({"scenario": sc.label, "mode": sc.mode, "variant": name, "seconds": p.seconds,
                         "bound": p.bound, "kv_cache_bytes": kv_cache_bytes(arch, sc.batch, kv_tokens, elem),
                         "largest_batch": largest_batch(arch, fit_context, elem, hw.memory_bytes),
                         # Training memory (gradients, optimiser state, saved activations) is not modelled.
                         "fits": None if sc.mode == "train" else
                         sc.batch <= largest_batch(arch, sc.seq, elem, hw.memory_bytes),
                         "flops": work.flops, "bytes": work.bytes})
    table = pd.DataFrame(rows)
    base = table[table.variant == "gpt2"].set_index("scenario")["seconds"]
    table["ratio"] = table["seconds"] / table["scenario"].map(base)
    return table


def fmt_seconds(s: float) -> str:
    for unit, size in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def markdown(table: pd.DataFrame, fit_context: int) -> str:
    cells = pd.DataFrame({
        "scenario": table["scenario"], "variant": table["variant"],
        "predicted time": table["seconds"].map(fmt_seconds), "× GPT-2": table["ratio"].map(lambda r: f"{r:.3f}×"),
        "bound": table["bound"], "KV cache": table["kv_cache_bytes"].map(fmt_bytes),
        "fits in memory": table["fits"].map({True: "yes", False: "no"}).fillna("not modelled"),
        f"largest batch at {fit_context:,}": table["largest_batch"].map(fmt_count),
    })
    return markdown_table(cells)
