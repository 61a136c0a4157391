"""The architecture a result row describes (``arch_from_row``) and the block its point was paired with
(``baseline_of_row``), read back through each choice's columns (``ablations.config.columns``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ablations.config.columns import config_from_row
from blockbench import choices
from components import ArchConfig, ModelConfig
from components.baselines import baseline_of


def arch_from_row(row: Mapping[str, Any], max_seq_len: int = 1 << 20) -> ArchConfig:
    """The architecture a result row describes: its sizes, every declared choice from its columns (GPT-2's value
    where a row predates the choice), and its FFN width as measured. A summary row without the depth or width
    (the quality statistics keep the heads) gets one layer of 64 dims a head: enough to name its choices."""
    heads = int(row["n_heads"])
    tied = row.get("tie_embeddings")
    tied = ModelConfig.tie_embeddings if tied is None or tied != tied else str(tied).lower() in ("true", "1", "1.0")
    model = ModelConfig(d_model=int(row.get("d_model", 64 * heads)), n_layers=int(row.get("n_layers", 1)),
                        n_heads=heads, max_seq_len=max_seq_len, tie_embeddings=tied)
    arch = ArchConfig(model=model, **{choice.group: config_from_row(choice, row) for choice in choices()})
    hidden = row.get("ffn_hidden")
    if hidden is None or hidden != hidden:  # absent, or NaN
        return arch
    return arch.replace(ffn=replace(arch.ffn, hidden_dim=int(hidden)))


def baseline_of_row(row: Mapping[str, Any], arch: ArchConfig) -> ArchConfig:
    """The block a result row's point was paired with (GPT-2's in a table without a ``baseline`` column)."""
    name, kv = row.get("baseline"), row.get("baseline_kv_heads")
    name = name if isinstance(name, str) else "gpt2"
    return baseline_of(arch, name, int(kv) if isinstance(kv, (int, float)) and kv == kv else None)
