"""How a report names and orders a variant of GPT-2's block: by the declared choices it moves.

``LayerNorm → RMSNorm`` for a one-choice flip, ``all six (Llama-2's block)`` for Llama-2's (five choices and its untied
embeddings, each counted); rows in the declarations' order (positions, norm, FFN, KV heads, bias, ...), then the
embeddings alone, Llama-2's five choices on GPT-2's embeddings, Llama-2's block last. The headline, the "what each
choice buys" table, the predictor's table and the full-size table all label rows with these.
"""

from __future__ import annotations

import pandas as pd

from ablations.report.formatting import number_word
from ablations.results.row_arch import arch_from_row
from blockbench import Choice, choices
from components import ArchConfig, ModelConfig, embeddings_text

LLAMA2, LLAMA2_TIED = "llama2", "llama2-tied"


def moved(arch: ArchConfig) -> list[tuple[int, Choice]]:
    """The declared choices ``arch`` holds at another value than GPT-2's, with their place in the declarations."""
    return [(i, choice) for i, choice in enumerate(choices()) if not choice.has(arch, choice.gpt2)]


def untied(arch: ArchConfig) -> bool:
    """``arch`` unties the embeddings GPT-2 ties (``ModelConfig``'s default): a change of its own, Llama-2's sixth."""
    return arch.model.tie_embeddings != ModelConfig.tie_embeddings


def flip_name(name: str, arch: ArchConfig, embeddings: bool = True) -> str | None:
    """``LayerNorm → RMSNorm`` for a one-choice flip of GPT-2's block; ``tied → untied embeddings`` for the
    embeddings alone; ``all six (Llama-2's block)`` for Llama-2's (its choices and its embeddings, counted);
    ``Llama-2's five choices, tied embeddings`` for its block on GPT-2's embeddings; None for anything else (two
    choices moved, say), which a headline has no row for. ``embeddings=False``: the embeddings are the size's, not a
    change (the full-size models, whose every flip has its size's embeddings)."""
    flipped = [choice for _, choice in moved(arch)]
    changes = len(flipped) + (embeddings and untied(arch))
    if name == LLAMA2:
        return f"all {number_word(changes)} (Llama-2's block)"
    if name == LLAMA2_TIED:
        return f"Llama-2's {number_word(len(flipped))} choices, {embeddings_text(arch.model.tie_embeddings)}"
    if changes == 1 and embeddings and untied(arch):
        return f"{embeddings_text(True).split()[0]} → {embeddings_text(False)}"
    return flipped[0].flip_text(getattr(arch, flipped[0].group).name) if changes == 1 else None


def flip_order(row: pd.Series) -> int:
    """A result row's place: its first moved choice's in the declarations, then the embeddings alone, Llama-2's
    block on GPT-2's embeddings, Llama-2's block (and GPT-2's) last."""
    tail = {LLAMA2_TIED: len(choices()) + 1, LLAMA2: len(choices()) + 2}
    if row["variant"] in tail:
        return tail[row["variant"]]
    first = moved(arch_from_row(row))
    return first[0][0] if first else len(choices()) if untied(arch_from_row(row)) else len(choices()) + 3


def flip_labels(rows: pd.DataFrame) -> dict[str, str]:
    """Each variant of ``rows`` as the flip it makes (``LayerNorm → RMSNorm``), or its name."""
    firsts = rows.drop_duplicates("variant")
    return {str(r["variant"]): flip_name(str(r["variant"]), arch_from_row(r)) or str(r["variant"])
            for _, r in firsts.iterrows()}
