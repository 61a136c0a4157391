"""One quality run: a byte-level LM trained for a fixed token budget, scored on fixed validation bytes.

AdamW with weight decay on matrices only, linear warm-up then cosine decay, gradient-norm clipping. The
seed fixes the initialisation and, through its own generator, the data order, so every variant of a seed
sees the same bytes in the same order. With ``train.common_init`` (the default) each weight is drawn by its
name from the seed (``components.common_random_init``), so the arms of a seed also start every module they
share from the same weights: common random numbers, the standard variance reducer for paired comparisons.

The validation curve is scored on ``eval_batches`` x ``batch`` windows; the final loss, the number every
verdict reads, on ``final_eval_batches`` x ``batch`` (a superset spread over the same split), so the validation
bytes' own sampling noise stays well below the seeds'. A NaN or infinite loss stops the run where it happened.

Under a wsd schedule a run also trains shorter runs of the same settings (``branches``): each forks, model and
optimizer state copied, where its cool-down begins, since until then it is this run step for step (the same rate and,
the data order being a prefix of this run's, the same bytes), and is scored as if it had trained alone.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from ablations.config.schema import TrainConfig
from ablations.quality import distributed, train_step
from ablations.quality.branches import check_branches
from ablations.quality.compiled import training_forward
from ablations.quality.data import Corpus
from ablations.quality.optimizer import TailAverage, decay_start, lr_at, make_optimizer
from ablations.quality.step_precision import autocast
from ablations.quality.train_step import deterministic_algorithms
from ablations.quality.validation import curve_spans, loss_by_position, validation_spans, window_losses
from ablations.quality.windows import chunk_spans, to_device, train_starts, windows
from components import ArchConfig, LanguageModel, build_lm, common_random_init


@dataclass
class TrainResult:
    lm: LanguageModel
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
    # Under a wsd schedule, each cool-down branch trained off this run's stable phase, by its steps, as if alone
    # (``ablations.quality.branches``).
    branches: dict[int, TrainResult] = field(default_factory=dict)


def train(arch: ArchConfig, corpus: Corpus, tc: TrainConfig, seed: int, device: torch.device,
          spans: torch.Tensor | None = None, progress: Callable[[str], None] | None = None,
          branches: Sequence[TrainConfig] = ()) -> TrainResult:
    """Train the quality model ``arch`` for ``tc.steps`` steps of ``tc.batch`` x ``tc.context`` bytes
    (``train.deterministic``: under deterministic algorithms, so a rerun repeats bit for bit). ``branches``: shorter
    wsd runs of the same settings, each in ``result.branches`` by its steps."""
    check_branches(tc, branches)
    with deterministic_algorithms(bool(tc.deterministic)):
        return _train(arch, corpus, tc, seed, device, spans, progress, branches)


@dataclass
class _Data:
    """What every run of a seed reads: its training windows' starts and the validation windows."""

    corpus: Corpus
    starts: torch.Tensor
    val: torch.Tensor
    final: torch.Tensor
    device: torch.device
    progress: Callable[[str], None] | None


@dataclass
class _Run:
    """One run as its steps go: the model, its optimizer, its result, and everything it recorded (``log``: the
    validation losses of every run it evaluated for, as (metric, step, value), and the train-loss averages)."""

    tc: TrainConfig
    lm: LanguageModel
    forward: Callable[[torch.Tensor], torch.Tensor]
    opt: torch.optim.Optimizer
    result: TrainResult
    log: list[tuple[str, int, float]] = field(default_factory=list)
    averaged: TailAverage | None = None
    running: float = 0.0
    since: int = 0

    @classmethod
    def start(cls, lm: LanguageModel, tc: TrainConfig, result: TrainResult | None = None) -> _Run:
        span = round(tc.steps * float(tc.average_last or 0.0))
        return cls(tc, lm, training_forward(lm, tc), make_optimizer(lm, tc),
                   result if result is not None else TrainResult(lm), averaged=TailAverage(span) if span else None)


def _scores(tc: TrainConfig, step: int) -> bool:
    """Whether a run of ``tc`` scores the validation windows after ``step`` steps."""
    return step % tc.eval_interval == 0 or step == tc.steps


def _train(arch: ArchConfig, corpus: Corpus, tc: TrainConfig, seed: int, device: torch.device,
           spans: torch.Tensor | None, progress: Callable[[str], None] | None,
           branches: Sequence[TrainConfig]) -> TrainResult:
    torch.manual_seed(seed)
    lm = build_lm(arch, device=device)
    if tc.common_init:
        common_random_init(lm, seed)
    spans = spans if spans is not None else validation_spans(corpus, tc)
    data = _Data(corpus, train_starts(len(corpus.train), tc.context, tc.steps, tc.batch, seed),
                 chunk_spans(curve_spans(spans, tc), tc.context), chunk_spans(spans, tc.context), device, progress)
    run = _Run.start(lm, tc)
    lm.train()
    _steps(run, 0, data, sorted(branches, key=decay_start))
    return run.result


def _steps(run: _Run, first: int, data: _Data, waiting: list[TrainConfig]) -> None:
    """``run`` from step ``first`` to its end; each of ``waiting`` forked off where its cool-down begins and trained
    to its own end, the validation scored wherever ``run`` or a branch not yet forked would score it."""
    tc, result = run.tc, run.result
    if first == 0 and not _evaluate(run, 0, data):
        return _close(run, waiting)
    for step in range(first, tc.steps):
        while waiting and decay_start(waiting[0]) == step:
            branch = _fork(run, waiting.pop(0))
            _steps(branch, step, data, [])
            result.branches[branch.tc.steps] = branch.result
        for group in run.opt.param_groups:
            group["lr"] = lr_at(step, tc)
        began = time.perf_counter()
        # Under torchrun this rank's shard of the global batch; the loss and the gradients are then averaged over
        # the ranks, which makes the step the single-process one (ablations.quality.distributed).
        w = to_device(windows(data.corpus.train, distributed.shard(data.starts[step]), tc.context + 1), data.device)
        result.data_seconds += time.perf_counter() - began
        value = train_step.training_step(run.lm, run.forward, run.opt, w, tc, data.device)
        if step == first:  # the first call compiles, or fails to
            result.compile_failed = getattr(run.forward, "failed", "") or result.compile_failed
        if not math.isfinite(value):
            result.diverged_at, result.reason = step, f"training loss became {value} at step {step}"
            return _close(run, waiting)
        if run.averaged is not None and step >= tc.steps - run.averaged.span:
            run.averaged.add(run.lm)
            if step == tc.steps - 1:
                run.averaged.load_into(run.lm)
        result.step_seconds.append(time.perf_counter() - began)
        result.train_seconds += result.step_seconds[-1]
        result.tokens += w.shape[0] * tc.context * distributed.world_size()
        run.running, run.since = run.running + value, run.since + 1
        done = step + 1
        if done % tc.log_interval == 0 or done == tc.steps:
            run.log.append(("train_loss", done, run.running / run.since))
            run.running, run.since = 0.0, 0
        if (_scores(tc, done) or any(_scores(b, done) for b in waiting)) and not _evaluate(run, done, data):
            return _close(run, waiting)
    _close(run, waiting)


def _evaluate(run: _Run, step: int, data: _Data) -> bool:
    tc, result = run.tc, run.result
    if step == tc.steps:
        windows_loss = window_losses(run.lm, data.final, tc.batch, autocast(tc, data.device))
        result.final_windows = windows_loss
        loss = result.final_val = float(windows_loss.mean())
    else:
        loss = float(loss_by_position(run.lm, data.val, tc.batch, autocast(tc, data.device)).mean())
    run.log.append(("val_loss", step, loss))
    if data.progress:
        data.progress(f"step {step}/{tc.steps}: val {loss:.3f} nats/{data.corpus.unit}")
    if not math.isfinite(loss):
        result.diverged_at, result.reason = step, f"validation loss became {loss} at step {step}"
        return False
    return True


def _curve(tc: TrainConfig, log: list[tuple[str, int, float]], last: int) -> list[tuple[str, int, float]]:
    """What a run of ``tc`` records of ``log`` up to step ``last``: every train-loss average, its own scores."""
    return [(metric, step, value) for metric, step, value in log
            if step <= last and (metric != "val_loss" or _scores(tc, step))]


def _fork(run: _Run, tc: TrainConfig) -> _Run:
    """A branch of ``run`` at its current step: the model, the optimizer's state, the running train loss and what
    was recorded so far copied, the rest its own."""
    lm = copy.deepcopy(run.lm)
    done = run.result
    result = TrainResult(lm, step_seconds=list(done.step_seconds), train_seconds=done.train_seconds,
                         tokens=done.tokens, data_seconds=done.data_seconds, compile_failed=done.compile_failed)
    branch = _Run.start(lm, tc, result)
    branch.opt.load_state_dict(copy.deepcopy(run.opt.state_dict()))
    branch.log = list(run.log)  # its curve keeps only its own scores (``_curve``)
    branch.running, branch.since = run.running, run.since
    return branch


def _close(run: _Run, waiting: list[TrainConfig]) -> None:
    """``run``'s curve from its log; where it stopped early, each branch not yet forked stops there too."""
    result = run.result
    last = result.diverged_at if result.diverged_at is not None else run.tc.steps
    result.curve = _curve(run.tc, run.log, last)
    for tc in waiting:
        result.branches[tc.steps] = TrainResult(
            result.lm, curve=_curve(tc, run.log, last), diverged_at=result.diverged_at,
            reason=f"{result.reason} (in the stable phase this branch shares)", train_seconds=result.train_seconds,
            tokens=result.tokens, step_seconds=list(result.step_seconds), data_seconds=result.data_seconds)
