"""Length extrapolation: a model trained at context L, scored at L, 2L, 4L on the same target bytes.

The validation spans are cut into windows of each length, so every length predicts exactly the same bytes
and only the context the model may use differs. Learned positions have no vector past their table
(exactly L rows, see ``quality_arch``): those lengths are reported as ``cannot``, with no number.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ablations.quality.validation import loss_by_position
from ablations.quality.windows import chunk_spans
from components import LanguageModel


@dataclass(frozen=True)
class Extrapolation:
    factor: int
    seq_len: int
    # Mean loss in nats/byte and the loss at each position; None where the model has no positions that far.
    loss: float | None
    by_position: torch.Tensor | None


def extrapolate(lm: LanguageModel, spans: torch.Tensor, context: int, factors: list[int],
                batch: int) -> list[Extrapolation]:
    """Score ``lm`` at ``context * f`` for each factor; batches shrink with length to bound memory."""
    limit = lm.arch.model.max_seq_len
    out = []
    for f in sorted(factors):
        length = context * f
        if length > limit:
            out.append(Extrapolation(f, length, None, None))
            continue
        per_position = loss_by_position(lm, chunk_spans(spans, length), max(1, batch // f))
        out.append(Extrapolation(f, length, float(per_position.mean()), per_position))
    return out


def buckets(per_position: torch.Tensor, width: int) -> list[tuple[int, int, float]]:
    """(first position, last position, mean loss) of consecutive buckets of ``width`` positions."""
    return [(i, min(i + width, len(per_position)) - 1, float(per_position[i : i + width].mean()))
            for i in range(0, len(per_position), width)]
