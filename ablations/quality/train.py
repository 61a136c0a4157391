"""One quality run: a byte-level LM trained for a fixed token budget, scored on fixed validation bytes.

AdamW with weight decay on matrices only, linear warm-up then cosine decay, gradient-norm clipping. The
seed fixes the initialisation and, through its own generator, the data order, so every variant of a seed
sees the same bytes in the same order. A NaN or infinite loss stops the run where it happened.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from omegaconf import DictConfig

from ablations.quality.data import VOCAB, Corpus, chunk_spans, eval_spans, train_starts, windows
from components import ArchConfig, LanguageModel, build_lm

log = logging.getLogger("ablations")


@dataclass
class TrainResult:
    model: LanguageModel
    # (metric, step, value in nats/byte): train_loss averaged over the steps since the last entry, val_loss.
    curve: list[tuple[str, int, float]] = field(default_factory=list)
    final_val: float = math.nan
    diverged_at: int | None = None
    reason: str = ""
    train_seconds: float = 0.0
    tokens: int = 0


def lr_at(step: int, tc: DictConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``lr * lr_min_ratio`` at the last step."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    progress = (step - tc.warmup) / max(1, tc.steps - tc.warmup)
    floor = tc.lr * tc.lr_min_ratio
    return floor + 0.5 * (tc.lr - floor) * (1 + math.cos(math.pi * min(1.0, progress)))


def make_optimizer(model: torch.nn.Module, tc: DictConfig) -> torch.optim.Optimizer:
    # Decay matrices and embeddings only; norms' weights and biases are scales and offsets (GPT-2/nanoGPT).
    decay = [p for p in model.parameters() if p.ndim >= 2]
    other = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": tc.weight_decay}, {"params": other, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=tc.lr, betas=(0.9, 0.95), eps=1e-8)


def validation_spans(corpus: Corpus, tc: DictConfig) -> torch.Tensor:
    """The fixed validation spans: eval_batches x batch windows of ``context`` bytes at the training length,
    grouped into spans long enough for the longest extrapolation length."""
    longest = max(tc.extrapolation)
    n_spans = max(1, tc.eval_batches * tc.batch // longest)
    return eval_spans(corpus.val, n_spans, longest * tc.context + 1)


@torch.no_grad()
def loss_by_position(model: LanguageModel, rows: torch.Tensor, batch: int) -> torch.Tensor:
    """Mean next-byte loss at each position over ``rows`` of (length + 1) bytes, in nats; shape (length,)."""
    was_training = model.training
    model.eval()
    total = torch.zeros(rows.shape[1] - 1, dtype=torch.float64)
    for i in range(0, len(rows), batch):
        w = rows[i : i + batch].to(next(model.parameters()).device)
        logits = model(w[:, :-1]).float()
        nll = F.cross_entropy(logits.transpose(1, 2), w[:, 1:], reduction="none")  # (b, length)
        total += nll.sum(0).double().cpu()
    model.train(was_training)
    return total / len(rows)


def train(arch: ArchConfig, corpus: Corpus, tc: DictConfig, seed: int, device: torch.device,
          spans: torch.Tensor | None = None, progress: Callable[[str], None] | None = None) -> TrainResult:
    """Train the quality model ``arch`` for ``tc.steps`` steps of ``tc.batch`` x ``tc.context`` bytes."""
    torch.manual_seed(seed)
    model = build_lm(arch, device=device)
    result = TrainResult(model)
    opt = make_optimizer(model, tc)
    starts = train_starts(len(corpus.train), tc.context, tc.steps, tc.batch, seed)
    val = chunk_spans(spans if spans is not None else validation_spans(corpus, tc), tc.context)

    def evaluate(step: int) -> bool:
        loss = float(loss_by_position(model, val, tc.batch).mean())
        result.curve.append(("val_loss", step, loss))
        if step == tc.steps:
            result.final_val = loss
        if progress:
            progress(f"step {step}/{tc.steps}: val {loss:.3f} nats/byte")
        if not math.isfinite(loss):
            result.diverged_at, result.reason = step, f"validation loss became {loss} at step {step}"
            return False
        return True

    model.train()
    if not evaluate(0):
        return result
    running, since = 0.0, 0
    for step in range(tc.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, tc)
        began = time.perf_counter()
        w = windows(corpus.train, starts[step], tc.context + 1).to(device)
        loss = F.cross_entropy(model(w[:, :-1]).float().reshape(-1, VOCAB), w[:, 1:].reshape(-1))
        value = loss.item()
        if not math.isfinite(value):
            result.diverged_at, result.reason = step, f"training loss became {value} at step {step}"
            return result
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if tc.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip)
        opt.step()
        result.train_seconds += time.perf_counter() - began
        result.tokens += w.shape[0] * tc.context
        running, since = running + value, since + 1
        done = step + 1
        if done % tc.log_interval == 0 or done == tc.steps:
            result.curve.append(("train_loss", done, running / since))
            running, since = 0.0, 0
        if (done % tc.eval_interval == 0 or done == tc.steps) and not evaluate(done):
            return result
    return result
