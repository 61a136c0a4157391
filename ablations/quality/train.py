"""One quality run: a byte-level LM trained for a fixed token budget, scored on fixed validation bytes.

AdamW with weight decay on matrices only, linear warm-up then cosine decay, gradient-norm clipping. The
seed fixes the initialisation and, through its own generator, the data order, so every variant of a seed
sees the same bytes in the same order. With ``train.common_init`` (the default) each weight is drawn by its
name from the seed (``components.common_random_init``), so the arms of a seed also start every module they
share from the same weights: common random numbers, the standard variance reducer for paired comparisons.

The validation curve is scored on ``eval_batches`` x ``batch`` windows; the final loss, the number every
verdict reads, on ``final_eval_batches`` x ``batch`` (a superset spread over the same split), so the validation
bytes' own sampling noise stays well below the seeds'. A NaN or infinite loss stops the run where it happened.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ablations.config.schema import TrainConfig
from ablations.quality import distributed, train_step
from ablations.quality.compiled import training_forward
from ablations.quality.data import Corpus
from ablations.quality.optimizer import TailAverage, lr_at, make_optimizer
from ablations.quality.step_precision import autocast
from ablations.quality.train_step import deterministic_algorithms
from ablations.quality.validation import curve_spans, loss_by_position, validation_spans, window_losses
from ablations.quality.windows import chunk_spans, to_device, train_starts, windows
from components import ArchConfig, LanguageModel, build_lm, common_random_init


@dataclass
class TrainResult:
    model: LanguageModel
    # (metric, step, value in nats per byte or token): train_loss averaged over the steps since the last entry,
    # val_loss.
    curve: list[tuple[str, int, float]] = field(default_factory=list)
    final_val: float = math.nan
    diverged_at: int | None = None
    reason: str = ""
    train_seconds: float = 0.0
    tokens: int = 0
    # Each optimizer step's wall time, batch reading included (s), and the part of it spent reading the batch: the
    # step's efficiency (achieved FLOP/s) is read from their median, and the first step's excess over it is the
    # compile time under train.compile.
    step_seconds: list[float] = field(default_factory=list)
    data_seconds: float = 0.0
    # Under train.compile, why compiling failed and the steps ran eagerly (``CompiledOrEager``); empty otherwise.
    compile_failed: str = ""
    # The final model's mean loss on each final validation window (nats/byte), for the validation set's own
    # sampling noise on a paired difference (scripts/quality_noise.py).
    final_windows: torch.Tensor | None = None


def train(arch: ArchConfig, corpus: Corpus, tc: TrainConfig, seed: int, device: torch.device,
          spans: torch.Tensor | None = None, progress: Callable[[str], None] | None = None) -> TrainResult:
    """Train the quality model ``arch`` for ``tc.steps`` steps of ``tc.batch`` x ``tc.context`` bytes
    (``train.deterministic``: under deterministic algorithms, so a rerun repeats bit for bit)."""
    with deterministic_algorithms(bool(tc.deterministic)):
        return _train(arch, corpus, tc, seed, device, spans, progress)


def _train(arch: ArchConfig, corpus: Corpus, tc: TrainConfig, seed: int, device: torch.device,
           spans: torch.Tensor | None, progress: Callable[[str], None] | None) -> TrainResult:
    torch.manual_seed(seed)
    model = build_lm(arch, device=device)
    if tc.common_init:
        common_random_init(model, seed)
    result = TrainResult(model)
    forward = training_forward(model, tc)
    opt = make_optimizer(model, tc)
    starts = train_starts(len(corpus.train), tc.context, tc.steps, tc.batch, seed)
    spans = spans if spans is not None else validation_spans(corpus, tc)
    val = chunk_spans(curve_spans(spans, tc), tc.context)
    final = chunk_spans(spans, tc.context)

    def evaluate(step: int) -> bool:
        if step == tc.steps:
            windows_loss = window_losses(model, final, tc.batch, autocast(tc, device))
            result.final_windows = windows_loss
            loss = result.final_val = float(windows_loss.mean())
        else:
            loss = float(loss_by_position(model, val, tc.batch, autocast(tc, device)).mean())
        result.curve.append(("val_loss", step, loss))
        if progress:
            progress(f"step {step}/{tc.steps}: val {loss:.3f} nats/{corpus.unit}")
        if not math.isfinite(loss):
            result.diverged_at, result.reason = step, f"validation loss became {loss} at step {step}"
            return False
        return True

    span = round(tc.steps * float(tc.average_last or 0.0))
    averaged = TailAverage(span) if span > 0 else None
    model.train()
    if not evaluate(0):
        return result
    running, since = 0.0, 0
    for step in range(tc.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, tc)
        began = time.perf_counter()
        # Under torchrun this rank's shard of the global batch; the loss and the gradients are then averaged over
        # the ranks, which makes the step the single-process one (ablations.quality.distributed).
        w = to_device(windows(corpus.train, distributed.shard(starts[step]), tc.context + 1), device)
        result.data_seconds += time.perf_counter() - began
        value = train_step.training_step(model, forward, opt, w, tc, device)
        if step == 0:  # the first call compiles, or fails to
            result.compile_failed = getattr(forward, "failed", "")
        if not math.isfinite(value):
            result.diverged_at, result.reason = step, f"training loss became {value} at step {step}"
            return result
        if averaged is not None and step >= tc.steps - averaged.span:
            averaged.add(model)
            if step == tc.steps - 1:
                averaged.load_into(model)
        result.step_seconds.append(time.perf_counter() - began)
        result.train_seconds += result.step_seconds[-1]
        result.tokens += w.shape[0] * tc.context * distributed.world_size()
        running, since = running + value, since + 1
        done = step + 1
        if done % tc.log_interval == 0 or done == tc.steps:
            result.curve.append(("train_loss", done, running / since))
            running, since = 0.0, 0
        if (done % tc.eval_interval == 0 or done == tc.steps) and not evaluate(done):
            return result
    return result
