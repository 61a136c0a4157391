"""One side of a quality comparison (an **arm**: a quality model, its training settings at its own rate, and the
corpus) and one seed of it, trained now or found in the seed ledger, as rows (``ablations.quality.run`` orders them).

A failing seed becomes a ``failed`` row and the other seeds still run; a diverging seed is a ``diverged`` row, a
result rather than a failure.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
import traceback
from dataclasses import dataclass, field

import torch

from ablations.config.columns import row_values
from ablations.config.schema import TrainConfig
from ablations.quality.branches import at_length, lengths
from ablations.quality.data import Corpus
from ablations.quality.distributed import RankLost
from ablations.quality.extrapolation import buckets, extrapolate
from ablations.quality.learning_rate import SCANNED, TUNED, ArmRate, arm_rate, with_rate
from ablations.quality.ledger import Ledger, arm_id, reused
from ablations.quality.optimizer import decay_start
from ablations.quality.step_efficiency import efficiency_rows
from ablations.quality.train import TrainResult, train
from ablations.quality.train_step import step_flops
from ablations.quality.validation import curve_spans
from ablations.results.rows import Rows
from blockbench import choices
from components import ArchConfig, build_lm, count_parameters

log = logging.getLogger("ablations")
BITS = "bits/byte"


def params_of(arch: ArchConfig) -> int:
    return count_parameters(build_lm(arch, device="meta"))


@dataclass
class Arm:
    """One side of the point's comparison: its quality model, the rows' identity, and its final loss per seed."""

    q: ArchConfig  # the quality model
    tc: TrainConfig  # the point's training settings at the arm's own rate (``learning_rate.arm_rate``)
    rate: ArmRate
    base: dict  # what every row of the arm carries (its choices, sizes, corpus)
    id: str  # the seed ledger's key (``arm_id``): two points with the same arm share its seeds
    note: str
    finals: dict[int, float] = field(default_factory=dict)  # seed -> final validation loss
    status: str = "ok"
    peak_flops: float = math.nan  # the machine's matrix-product rate at the step's precision (FLOP/s)


def make_arm(tc: TrainConfig, point_base: dict, measured: ArchConfig, q: ArchConfig, variant: str, corpus: Corpus,
         params_baseline: int, step_choice: str = "", peak_flops: float = math.nan) -> Arm:
    """The arm of ``measured`` (the point's block at the measurement's sizes), trained as ``q`` (at the quality
    sizes) at the rate its ``variant`` label is given (``learning_rate.arm_rate``)."""
    rate = arm_rate(tc, variant)
    tc = with_rate(tc, rate.lr)
    aid = arm_id(q, tc, corpus.sha256)
    base = {**point_base, **{k: v for choice in choices() for k, v in row_values(choice, measured).items()}}
    base.update(variant=variant, tie_embeddings=measured.model.tie_embeddings, d_model=q.model.d_model,
                n_layers=q.model.n_layers, n_heads=q.model.n_heads, n_kv_heads=q.n_kv_heads, ffn_hidden=q.ffn_hidden,
                attn=q.attn.name, params=params_of(q), params_baseline=params_baseline,
                dtype=tc.precision, compile=True if tc.compile else None,
                attention_core=tc.attention_core if tc.precision != "float32" else None, step_choice=step_choice,
                batch=tc.batch, seq_len=tc.context, corpus=corpus.sha256, vocab_size=q.model.vocab_size, arm=aid,
                train_flops_step=step_flops(q, tc), train_steps=int(tc.steps), lr_source=rate.source,
                schedule=tc.schedule)
    note = (f"quality model (train={tc.name}): d={q.model.d_model}, {q.model.n_layers} layers, "
            f"{q.n_kv_heads} KV of {q.model.n_heads} heads (point: {measured.n_kv_heads} of "
            f"{measured.model.n_heads})")
    return Arm(q, tc, rate, base, aid, note, peak_flops=peak_flops)


def train_seed(arm: Arm, seed: int, protocol: TrainConfig, corpus: Corpus, spans: torch.Tensor, device: torch.device,
          ledger: Ledger, rows: Rows, tc: TrainConfig | None = None, extras: bool = True) -> list[dict]:
    """One seed of one arm, from the ledger or trained now; its rows are appended to the point's. ``protocol``: the
    point's training settings; ``tc``: another's (a budget run, the learning-rate check). ``extras``: also the
    extrapolation's rows (a budget run needs its final loss only). Under a wsd schedule with ``branch_steps`` one run
    trains every length, and each other length's seed goes into the ledger too (``ablations.quality.branches``)."""
    tc = tc if tc is not None else protocol
    aid = arm.id if tc is protocol else arm_id(arm.q, tc, corpus.sha256)
    # The point's own lengths at another rate (a scan's or the check's seed), not a budget's: each length's rows say
    # that length, the branches' included.
    own = tc is protocol or dataclasses.replace(tc, lr=protocol.lr) == protocol
    found = ledger.get(aid, seed)
    if found is None:
        steps = lengths(tc)
        run = at_length(tc, steps[-1])
        label = f"quality {arm.base['variant']} seed {seed}" + (
            f" at {run.steps} steps with cool-down branches at {', '.join(map(str, steps[:-1]))}" if len(steps) > 1
            else "" if tc is protocol else f" at {tc.steps} steps" if tc.steps != protocol.steps
            else f" at lr {tc.lr:g}")
        try:
            began = time.perf_counter()
            result = train(arm.q, corpus, run, int(seed), device, spans, functools.partial(log.info, f"{label} %s"),
                           [at_length(tc, s) for s in steps[:-1]])
            elapsed = time.perf_counter() - began
        except RankLost:
            raise
        except Exception as exc:  # this seed is recorded as failed; the others and the sweep go on
            seeded = _seeded(arm, seed, tc, aid)
            arm.status = failed(seeded, rows, f"{type(exc).__name__}: {exc}", label)
            return seeded.rows  # not in the ledger: a rerun tries it again
        for length, trained in {run.steps: result, **result.branches}.items():
            at = at_length(tc, length)
            at_id = aid if length == tc.steps else arm_id(arm.q, at, corpus.sha256)
            if length != tc.steps and ledger.get(at_id, seed) is not None:
                continue
            seeded = _seeded(arm, seed, at, at_id, own_length=own)
            _seed_rows(seeded, trained, at, spans, arm, corpus.unit, extras,
                       elapsed if length == run.steps else None, run.steps)
            ledger.put(at_id, seed, seeded.rows)
            if length == tc.steps:
                found = seeded.rows
    else:
        found = reused(found, arm.base)
        if own:  # a branch a run at another rate left labelled with that run's length
            found = [dict(r, train_steps=int(tc.steps)) for r in found]
    rows.rows.extend(found)
    for r in found:
        if r["metric"] == "val_loss" and r["mode"] == "final" and r.get("status") == "ok" and tc is protocol:
            arm.finals[int(seed)] = float(r["value"])
    return found


def _seeded(arm: Arm, seed: int, tc: TrainConfig, aid: str, own_length: bool = False) -> Rows:
    """The rows of one seed of ``arm`` trained as ``tc``: the arm's identity, this seed's, and the rate it trained at.
    ``own_length``: ``tc`` is one length of the arm's own protocol (a branch standing for another horizon's seed)."""
    seeded = Rows(base=dict(arm.base, seed=int(seed), arm=aid, lr=float(tc.lr)))
    if own_length:
        seeded.base["train_steps"] = int(tc.steps)
    if tc.lr != arm.tc.lr:  # a scan's rate or a budget's own: the arm's source does not describe it
        seeded.base["lr_source"] = f"{SCANNED if tc.lr_scan else TUNED + ' for this budget'}: lr {tc.lr:g}"
    return seeded


def _seed_rows(seeded: Rows, result: TrainResult, tc: TrainConfig, spans: torch.Tensor, arm: Arm, unit: str,
               extras: bool, elapsed: float | None, run_steps: int) -> None:
    """A trained seed's rows. ``elapsed``: the whole run's wall time; None for a cool-down branch of a run of
    ``run_steps``, whose wall time is its own cool-down's (the run's row holds the rest)."""
    if result.compile_failed:  # the rows say the steps ran eagerly, and why
        eager = f"compile failed, trained eagerly: {result.compile_failed}"
        chosen = seeded.base.get("step_choice")
        seeded.base.update(compile=None, step_choice=f"{chosen}; {eager}" if chosen else eager)
    result_rows(seeded, result, tc, spans, arm.note, unit, extras)
    efficiency_rows(seeded, result, tc, arm.peak_flops)
    if elapsed is not None:
        seeded.add("train_wall_time", elapsed, "s", mode="quality",
                   note="the whole seed: build, training, every evaluation and the extrapolation"
                   + (", every cool-down branch included" if result.branches else ""))
    else:
        own = sum(result.step_seconds[decay_start(tc):])
        seeded.add("train_wall_time", own, "s", mode="quality",
                   note=f"a cool-down branch of a wsd run of {run_steps} steps: its own cool-down's steps only")


def failed(seeded: Rows, rows: Rows, error: str, label: str) -> str:
    log.error("%s failed: %s", label, error)
    log.debug("%s", traceback.format_exc())
    seeded.rows.clear()  # partial rows of a failed seed would mix with the others' complete ones
    seeded.add("error", None, "", mode="quality", status="failed", error=error)
    rows.rows.extend(seeded.rows)
    return "failed"


def result_rows(rows: Rows, result: TrainResult, tc: TrainConfig, spans: torch.Tensor, note: str,
                 unit: str, extras: bool = True) -> None:
    nats, per_byte = f"nats/{unit}", unit == "byte"
    for metric, step, value in result.curve:
        rows.add(metric, value, nats, mode="curve", step=step, statistic="mean")
        if per_byte:
            rows.add(metric.replace("_loss", "_bpb"), value / math.log(2), BITS, mode="curve", step=step,
                     statistic="mean")
    if result.diverged_at is not None:
        log.warning("quality %s seed %s diverged: %s", rows.base["variant"], rows.base["seed"], result.reason)
        rows.add("val_loss", math.nan, nats, mode="final", step=result.diverged_at, statistic="diverged",
                 status="diverged", error=result.reason, note=note)
        return
    rows.add("val_loss", result.final_val, nats, mode="final", step=tc.steps, statistic="mean", note=note)
    if per_byte:
        rows.add("val_bpb", result.final_val / math.log(2), BITS, mode="final", step=tc.steps, statistic="mean")
    rows.add("train_tokens_per_s", result.tokens / result.train_seconds, "tokens/s", mode="quality",
             note="training steps only (evaluation excluded)")
    if not extras:
        return
    width = tc.context // tc.position_buckets
    for ex in extrapolate(result.lm, curve_spans(spans, tc), tc.context, list(tc.extrapolation), tc.batch):
        if ex.loss is None:
            rows.add("extrap_loss", math.nan, nats, mode="extrapolation", seq_len=ex.seq_len, statistic="cannot",
                     note=f"learned positions have no vector past position {tc.context - 1}")
            continue
        rows.add("extrap_loss", ex.loss, nats, mode="extrapolation", seq_len=ex.seq_len, statistic="mean")
        for first, last, value in buckets(ex.by_position, width):
            rows.add("loss_by_position", value, nats, mode="extrapolation", seq_len=ex.seq_len, position=first,
                     statistic="mean", note=f"positions {first}-{last}")
