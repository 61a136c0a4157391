"""What a quality run is scored on: the fixed validation spans (the final score's and the curve's subset of them),
and the model's loss on them, per window or per position."""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from ablations.config.schema import TrainConfig
from ablations.quality.data import Corpus
from ablations.quality.windows import eval_spans, to_device
from components import LanguageModel


def validation_spans(corpus: Corpus, tc: TrainConfig) -> torch.Tensor:
    """The fixed final validation spans: ``final_eval_batches`` x ``batch`` windows of ``context`` bytes at the
    training length, grouped into spans long enough for the longest extrapolation length."""
    longest = max(tc.extrapolation)
    n_spans = max(1, final_batches(tc) * tc.batch // longest)
    return eval_spans(corpus.val, n_spans, longest * tc.context + 1)


def final_batches(tc: TrainConfig) -> int:
    """The final score's batches: ``final_eval_batches``, never fewer than the curve's ``eval_batches``."""
    return max(int(tc.final_eval_batches or tc.eval_batches), int(tc.eval_batches))


def curve_spans(spans: torch.Tensor, tc: TrainConfig) -> torch.Tensor:
    """The curve's (and the extrapolation's) spans: ``eval_batches`` x ``batch`` windows' worth, every k-th of the
    final spans, so they spread over the same split at a fraction of the cost."""
    want = max(1, tc.eval_batches * tc.batch // max(tc.extrapolation))
    if want >= len(spans):
        return spans
    return spans[torch.linspace(0, len(spans) - 1, want).round().long()]


@torch.no_grad()
def window_losses(lm: LanguageModel, rows: torch.Tensor, batch: int,
                  precision: contextlib.AbstractContextManager | None = None) -> torch.Tensor:
    """Mean next-byte loss of each of ``rows`` (windows of length + 1 bytes), in nats; shape (len(rows),)."""
    was_training = lm.training
    lm.eval()
    out = []
    for i in range(0, len(rows), batch):
        w = to_device(rows[i : i + batch], next(lm.parameters()).device)
        with precision or contextlib.nullcontext():
            logits = lm(w[:, :-1]).float()
        out.append(F.cross_entropy(logits.transpose(1, 2), w[:, 1:], reduction="none").double().mean(1).cpu())
    lm.train(was_training)
    return torch.cat(out)


@torch.no_grad()
def loss_by_position(lm: LanguageModel, rows: torch.Tensor, batch: int,
                     precision: contextlib.AbstractContextManager | None = None) -> torch.Tensor:
    """Mean next-byte loss at each position over ``rows`` of (length + 1) bytes, in nats; shape (length,)."""
    was_training = lm.training
    lm.eval()
    total = torch.zeros(rows.shape[1] - 1, dtype=torch.float64)
    for i in range(0, len(rows), batch):
        w = to_device(rows[i : i + batch], next(lm.parameters()).device)
        with precision or contextlib.nullcontext():
            logits = lm(w[:, :-1]).float()
        nll = F.cross_entropy(logits.transpose(1, 2), w[:, 1:], reduction="none")  # (b, length)
        total += nll.sum(0).double().cpu()
    lm.train(was_training)
    return total / len(rows)
