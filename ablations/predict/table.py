"""Predicted time, its bound, KV-cache memory and the largest batch, per flip and scenario, on one machine.

Memory figures are the attention's own cache (``ablations.roofline.work.kv_cache_bytes``: K and V of its KV heads,
MLA's latent, a window's at most W positions) beside the weights; activations and training memory (gradients,
optimiser state, saved activations) are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ablations.predict.scenarios import Scenario
from ablations.report.formatting import fmt_bytes, fmt_count, markdown_table
from ablations.roofline.hardware import Hardware
from ablations.roofline.time_model import predict_mode
from ablations.roofline.work import ELEMENT_BYTES, kv_bytes_per_token, kv_cache_bytes, largest_batch, mode_work
from components import ArchConfig


def prediction_table(variants: dict[str, ArchConfig], hw: Hardware, scenarios: list[Scenario], dtype: str,
                     fit_context: int, against: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per scenario and variant; ``ratio`` is its time over that of the variant ``against`` names for it in
    the same scenario (default, and for any variant it does not name: ``gpt2``), written in the ``against`` column.
    Weights, cache and activations in ``dtype``; the language model's head and embedding included.

    ``kv_cache_bytes`` is the batch's cache at the scenario's context, ``kv_bytes_per_token`` what one more token
    adds to one sequence's, ``largest_batch`` the sequences that fit beside the weights at ``fit_context``, and
    ``fits`` whether the scenario's own batch does at its context.
    """
    elem = ELEMENT_BYTES[dtype]
    against = dict(against or {})
    rows = []
    for sc in scenarios:
        for name, arch in variants.items():
            work = mode_work(arch, sc.mode, sc.batch, sc.seq, elem, lm_head=True)
            p = predict_mode(arch, sc.mode, sc.batch, sc.seq, hw, elem)
            kv_tokens = sc.seq if sc.mode != "train" else 0
            rows.append({"scenario": sc.label, "mode": sc.mode, "batch": sc.batch, "context": sc.seq,
                         "variant": name, "against": against.get(name, "gpt2"), "seconds": p.seconds,
                         "bound": p.bound, "kv_cache_bytes": kv_cache_bytes(arch, sc.batch, kv_tokens, elem),
                         "kv_bytes_per_token": kv_bytes_per_token(arch, elem),
                         "largest_batch": largest_batch(arch, fit_context, elem, hw.memory_bytes),
                         # Training memory (gradients, optimiser state, saved activations) is not modelled.
                         "fits": None if sc.mode == "train" else
                         sc.batch <= largest_batch(arch, sc.seq, elem, hw.memory_bytes),
                         "flops": work.flops, "bytes": work.bytes})
    table = pd.DataFrame(rows)
    seconds = table.set_index(["scenario", "variant"])["seconds"]
    missing = sorted(set(table["against"]) - set(table["variant"]))
    if missing:
        raise ValueError(f"ratios are against {missing}, which are not among the variants predicted")
    table["ratio"] = table["seconds"] / [seconds[(s, a)] for s, a in zip(table["scenario"], table["against"],
                                                                       strict=True)]
    return table


def fmt_seconds(s: float) -> str:
    for unit, size in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def markdown(table: pd.DataFrame, fit_context: int) -> str:
    cells = pd.DataFrame({
        "scenario": table["scenario"], "variant": table["variant"], "against": table["against"],
        "predicted time": table["seconds"].map(fmt_seconds), "× against": table["ratio"].map(lambda r: f"{r:.3f}×"),
        "bound": table["bound"], "KV cache": table["kv_cache_bytes"].map(fmt_bytes),
        "KV / token": table["kv_bytes_per_token"].map(fmt_bytes),
        "fits in memory": table["fits"].map({True: "yes", False: "no"}).fillna("not modelled"),
        f"largest batch at {fit_context:,}": table["largest_batch"].map(fmt_count),
    })
    return markdown_table(cells)
