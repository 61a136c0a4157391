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

import contextlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ablations.config.schema import TrainConfig
from ablations.quality import distributed
from ablations.quality.data import Corpus
from ablations.quality.windows import chunk_spans, eval_spans, train_starts, windows
from ablations.roofline.work import mode_work
from components import ArchConfig, LanguageModel, build_lm, common_random_init
from components.kernels import core_dtype

log = logging.getLogger("ablations")


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


class TailAverage:
    """The mean of the weights over the last ``span`` optimizer steps (Polyak's tail average), loaded into the model
    for the final score: it scores where the run's last steps went rather than the last step's noise."""

    def __init__(self, span: int) -> None:
        self.span, self.count, self.sums = span, 0, None

    @torch.no_grad()
    def add(self, model: torch.nn.Module) -> None:
        params = [p.detach() for p in model.parameters()]
        if self.sums is None:
            self.sums = [p.double().clone() for p in params]
        else:
            torch._foreach_add_(self.sums, [p.double() for p in params])
        self.count += 1

    @torch.no_grad()
    def load_into(self, model: torch.nn.Module) -> None:
        for p, total in zip(model.parameters(), self.sums or [], strict=True):
            p.copy_(total / self.count)


def lr_at(step: int, tc: TrainConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``lr * lr_min_ratio`` at the last step."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    progress = (step - tc.warmup) / max(1, tc.steps - tc.warmup)
    floor = tc.lr * tc.lr_min_ratio
    return floor + 0.5 * (tc.lr - floor) * (1 + math.cos(math.pi * min(1.0, progress)))


def make_optimizer(model: torch.nn.Module, tc: TrainConfig) -> torch.optim.Optimizer:
    # Decay matrices and embeddings only; norms' weights and biases are scales and offsets (GPT-2/nanoGPT).
    decay = [p for p in model.parameters() if p.ndim >= 2]
    other = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": tc.weight_decay}, {"params": other, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=tc.lr, betas=(0.9, 0.95), eps=1e-8)


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
def window_losses(model: LanguageModel, rows: torch.Tensor, batch: int,
                  precision: contextlib.AbstractContextManager | None = None) -> torch.Tensor:
    """Mean next-byte loss of each of ``rows`` (windows of length + 1 bytes), in nats; shape (len(rows),)."""
    was_training = model.training
    model.eval()
    out = []
    for i in range(0, len(rows), batch):
        w = to_device(rows[i : i + batch], next(model.parameters()).device)
        with precision or contextlib.nullcontext():
            logits = model(w[:, :-1]).float()
        out.append(F.cross_entropy(logits.transpose(1, 2), w[:, 1:], reduction="none").double().mean(1).cpu())
    model.train(was_training)
    return torch.cat(out)


@torch.no_grad()
def loss_by_position(model: LanguageModel, rows: torch.Tensor, batch: int,
                     precision: contextlib.AbstractContextManager | None = None) -> torch.Tensor:
    """Mean next-byte loss at each position over ``rows`` of (length + 1) bytes, in nats; shape (length,)."""
    was_training = model.training
    model.eval()
    total = torch.zeros(rows.shape[1] - 1, dtype=torch.float64)
    for i in range(0, len(rows), batch):
        w = to_device(rows[i : i + batch], next(model.parameters()).device)
        with precision or contextlib.nullcontext():
            logits = model(w[:, :-1]).float()
        nll = F.cross_entropy(logits.transpose(1, 2), w[:, 1:], reduction="none")  # (b, length)
        total += nll.sum(0).double().cpu()
    model.train(was_training)
    return total / len(rows)


# train.precision's concrete values: the dtype torch.autocast runs the forward in (None: float32, no autocast).
PRECISIONS = {"float32": None, "bfloat16": torch.bfloat16}


class StepPrecision(contextlib.AbstractContextManager):
    """``torch.autocast`` at ``dtype`` on ``device_type``, with the attention core in float32 when ``core_float32``:
    entered anew at each ``with``, so one instance serves every batch of an evaluation."""

    def __init__(self, device_type: str, dtype: torch.dtype, core_float32: bool) -> None:
        self.device_type, self.dtype, self.core_float32 = device_type, dtype, core_float32
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> StepPrecision:
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(torch.autocast(self.device_type, dtype=self.dtype))
        if self.core_float32:
            self._stack.enter_context(core_dtype(torch.float32))
        return self

    def __exit__(self, *exc: object) -> bool | None:
        return self._stack.__exit__(*exc)


def autocast(tc: TrainConfig, device: torch.device) -> contextlib.AbstractContextManager:
    """The forward's precision: ``torch.autocast`` at ``train.precision`` on ``device``, with the attention core in
    float32 where ``train.attention_core`` says so (``StepPrecision``); nothing (float32) for ``float32``. ``tc`` is
    resolved (``ablations.quality.precision.resolve``): no ``auto`` reaches here."""
    if tc.precision not in PRECISIONS:
        raise ValueError(f"train.precision={tc.precision} reaches the step unresolved: "
                         "ablations.quality.precision.resolved chooses it at the run's start")
    dtype = PRECISIONS[tc.precision]
    if dtype is None:
        return contextlib.nullcontext()
    return StepPrecision(device.type, dtype, tc.attention_core == "float32")


class CompiledOrEager:
    """The model's forward through ``torch.compile``; if compiling fails on the first call (no C++ compiler, a
    backend error), one warning line and the eager model from then on, never a traceback. The failure holds for
    the process: later models go eager at once, without another try or line. ``failed`` says why."""

    # Dynamo keeps one compiled entry per block a process trains (a sweep's arms share LanguageModel.forward); past
    # its default limit of 8 it would run the rest eagerly while the rows said compiled.
    RECOMPILE_LIMIT = 64
    broken = ""  # why compiling failed in this process, once it has

    def __init__(self, model: LanguageModel) -> None:
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, self.RECOMPILE_LIMIT)
        self.model, self.failed = model, CompiledOrEager.broken
        self.compiled = model if self.failed else torch.compile(model)

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.failed:
            return self.model(tokens)
        try:
            return self.compiled(tokens)
        except Exception as exc:  # a compiler missing or refusing: the step is still the same step, eagerly
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self.failed = CompiledOrEager.broken = f"{type(exc).__name__}: {first}"[:300]
            log.warning("torch.compile failed (%s): training eagerly", self.failed)
            return self.model(tokens)


def training_forward(model: LanguageModel, tc: TrainConfig) -> Callable[[torch.Tensor], torch.Tensor]:
    """The model as the training steps call it: ``torch.compile``d with ``train.compile`` (one shape, so it compiles
    once; eager if that fails: ``CompiledOrEager``); evaluation calls the eager model, whose lengths vary."""
    return CompiledOrEager(model) if tc.compile is True else model


def to_device(rows: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``rows`` on ``device``; to a GPU from pinned memory without blocking, so the copy overlaps the work queued
    before it (the next use is on the same stream, which orders it)."""
    if device.type == "cuda":
        return rows.pin_memory().to(device, non_blocking=True)
    return rows.to(device)


def training_step(model: LanguageModel, forward: Callable[[torch.Tensor], torch.Tensor], opt: torch.optim.Optimizer,
                  w: torch.Tensor, tc: TrainConfig, device: torch.device) -> float:
    """One optimizer step on the windows ``w`` (batch, context + 1 ids): the forward (``forward``, from
    ``training_forward``) under ``autocast``, next-id cross-entropy, backward, gradient clipping at ``train.clip``,
    the optimizer's step. Returns the loss (under torchrun averaged over the ranks); a NaN or infinite one returns
    before the backward, leaving the weights as they were. What ``train`` runs every step, and what
    ``ablations.measure.quality_step`` times."""
    with autocast(tc, device):
        logits = forward(w[:, :-1]).float()
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
    value = distributed.mean(loss.item(), device)
    if not math.isfinite(value):
        return value
    opt.zero_grad(set_to_none=True)
    loss.backward()
    distributed.average_gradients(model)
    if tc.clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip)
    opt.step()
    return value


def step_flops(arch: ArchConfig, tc: TrainConfig) -> float:
    """The work model's FLOPs of one training step of ``arch`` on a ``train.batch`` x ``train.context`` batch, the LM
    head included (``ablations.roofline.work``): what a step's achieved rate and the multiplier's FLOPs read."""
    return mode_work(arch, "train", int(tc.batch), int(tc.context), lm_head=True).flops


# The rate every timed step runs at. Each call is a real optimizer step, so the weights move from call to call (and
# each arm takes its own number of calls). That does not bias a timing: what a step costs does not depend on the
# weights' values (dense kernels, no work that depends on the data, the optimizer's state a fixed size after its first
# step), so long as they stay finite and normal. A small rate keeps them near their initialisation over the thousands
# of steps a long measurement takes on its one batch: no divergence, no overflow, no denormals (slow on a CPU). The
# optimizer's state is created by the first, untimed call, so no timed call pays for it.
STEP_LR = 1e-4


class TimedStep:
    """The step ``train`` takes, as a call to time: the quality model ``arch`` built as ``train`` builds it (seeded,
    common init where the run uses it), its own AdamW at ``STEP_LR``, and one ``training_step`` on the batch ``w``
    per call. ``ablations.measure.quality_step`` times two against each other; ``ablations.quality.precision`` times
    one eagerly and compiled."""

    def __init__(self, arch: ArchConfig, tc: TrainConfig, seed: int, w: torch.Tensor, device: torch.device):
        torch.manual_seed(seed)
        self.arch = arch
        self.model: LanguageModel = build_lm(arch, device=device)
        if tc.common_init:
            common_random_init(self.model, seed)
        self.model.train()
        self.forward = training_forward(self.model, tc)
        self.opt = make_optimizer(self.model, tc)
        for group in self.opt.param_groups:
            group["lr"] = STEP_LR
        self.tc, self.w, self.device = tc, w, device

    def __call__(self) -> float:
        value = training_step(self.model, self.forward, self.opt, self.w, self.tc, self.device)
        if not math.isfinite(value):  # training_step skipped the update; a timing of that would be no step's
            raise FloatingPointError(f"the quality model's training loss became {value}")
        return value


def train(arch: ArchConfig, corpus: Corpus, tc: TrainConfig, seed: int, device: torch.device,
          spans: torch.Tensor | None = None, progress: Callable[[str], None] | None = None) -> TrainResult:
    """Train the quality model ``arch`` for ``tc.steps`` steps of ``tc.batch`` x ``tc.context`` bytes."""
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
        value = training_step(model, forward, opt, w, tc, device)
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
