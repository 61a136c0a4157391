"""How a report names and orders a variant of GPT-2's block: by the declared choices it moves.

``LayerNorm → RMSNorm`` for a one-choice flip, ``all five (Llama-2's block)`` for Llama-2's; rows in the declarations'
order (positions, norm, FFN, KV heads, bias, ...), Llama-2's block last. The headline, the "what each choice buys"
table, the predictor's table and the full-size table all label rows with these.
"""

from __future__ import annotations

import pandas as pd

from ablations.report.formatting import number_word
from ablations.results.row_arch import arch_from_row
from blockbench import Choice, choices
from components import ArchConfig

LLAMA2 = "llama2"


def moved(arch: ArchConfig) -> list[tuple[int, Choice]]:
    """The declared choices ``arch`` holds at another value than GPT-2's, with their place in the declarations."""
    return [(i, choice) for i, choice in enumerate(choices()) if not choice.has(arch, choice.gpt2)]


def flip_name(name: str, arch: ArchConfig) -> str | None:
    """``LayerNorm → RMSNorm`` for a one-choice flip of GPT-2's block, ``all five (Llama-2's block)`` for
    Llama-2's; None for anything else (two choices moved, say), which a headline has no row for."""
    flipped = [choice for _, choice in moved(arch)]
    if name == LLAMA2:
        return f"all {number_word(len(flipped))} (Llama-2's block)"
    return flipped[0].flip_text(getattr(arch, flipped[0].group).name) if len(flipped) == 1 else None


def flip_order(row: pd.Series) -> int:
    """A result row's place: its first moved choice's in the declarations, Llama-2's block (and GPT-2's) last."""
    if row["variant"] == LLAMA2:
        return len(choices())
    first = moved(arch_from_row(row))
    return first[0][0] if first else len(choices()) + 1
