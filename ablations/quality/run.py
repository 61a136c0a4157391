"""The quality runs of one sweep point: one training run per seed, as long-form rows.

Quality rows describe the quality model, not the measurement model: their size columns (d_model, n_layers,
n_heads, n_kv_heads, ffn_hidden, params, params_baseline) are the small model's, ``batch``/``seq_len`` the
training shape, ``vocab_size`` the data's vocabulary (256 for bytes), ``dtype`` the training's precision
(``train.precision`` as resolved: a bf16 measurement sweep does not change the losses), ``attention_core`` the
attention core's dtype under bf16, ``compile`` true only with ``train.compile`` (the top-level ``compile=true`` is
the measurement's), ``step_choice`` why the step runs so (``ablations.quality.precision``) and ``corpus`` the sha256
of the training data. Each seed's step efficiency: ``train_flops_per_s`` (the work model's training FLOPs per step
over the median step), ``train_peak_fraction`` (that over the machine's measured matrix-product rate at the step's
precision), ``train_data_share`` (reading batches) and, compiled, ``compile_time``.

Losses are in nats per byte, or per token on token files (the ``unit`` says which; bits-per-byte rows are the
bytes' alone). A failing seed becomes a ``failed`` row and the other seeds still run; a diverging seed is a
``diverged`` row, a result rather than a failure (its pair leaves the comparison, and a sequential point goes on to
its next seed). A corpus that cannot be read is the environment's fault, not the point's: ``CorpusError`` stops the
run.

With ``train.target_mde`` the seeds are sequential (``seeds``): the point trains each next seed for itself and
for its baseline (``arm``: ``ledger``) until its comparison is answered or the budget is spent, and its final
``val_loss`` rows say how it stopped (``stopped``, ``looks``, ``target_mde``). Its file holds the baseline's rows
of every seed it used, so each point file is its comparison's whole evidence.
"""

from __future__ import annotations

import functools
import logging
import math
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from ablations.config.columns import row_values
from ablations.config.plan import QualityPlan
from ablations.config.schema import TrainConfig
from ablations.quality.data import Corpus, CorpusError, open_corpus
from ablations.quality.distributed import RankLost
from ablations.quality.extrapolation import buckets, extrapolate
from ablations.quality.inference import paired_test
from ablations.quality.ledger import Ledger, arm_id, reused
from ablations.quality.seeds import BASELINE, STOPS, family_size, seed_rule
from ablations.quality.step_efficiency import efficiency_rows
from ablations.quality.train import TrainResult, train
from ablations.quality.train_step import step_flops
from ablations.quality.validation import curve_spans, validation_spans
from ablations.results.rows import Rows
from blockbench import choices
from components import ArchConfig, build_lm, count_parameters

log = logging.getLogger("ablations")
BITS = "bits/byte"
# The learning-rate check's rates, as multiples of train.lr (train.lr_check).
LR_FACTORS = (0.5, 1.0, 2.0)
# A budget run's rows, renamed so that no verdict reads them as the point's own final loss; a check budget's
# (``train.check_budgets``) apart again, so that no curve is built from them.
BUDGET_METRICS = {"val_loss": "budget_loss", "train_wall_time": "budget_wall_time"}
CHECK_METRICS = {"val_loss": "check_loss", "train_wall_time": "budget_wall_time"}


def _params(arch: ArchConfig) -> int:
    return count_parameters(build_lm(arch, device="meta"))


def run_quality(plan: QualityPlan, rows: Rows, device: torch.device, folder: Path | None = None) -> str:
    """Train the point's quality model seed by seed (``seeds.seed_rule``); append the rows; ``ok`` or ``failed``.

    ``folder`` is the sweep's: its seed ledger lets points share the baseline's seeds (``ledger``)."""
    try:
        return _run_seeds(plan, rows, device, Ledger(folder))
    except (CorpusError, RankLost):  # every later point would meet it too: stop with one line, not N failed points
        raise
    except Exception as exc:  # whatever escaped the per-seed guard is this point's failure, not the sweep's
        return _failed(Rows(base=rows.base), rows, f"{type(exc).__name__}: {exc}", f"quality {rows.base['variant']}")


@dataclass
class _Arm:
    """One side of the point's comparison: its quality model, the rows' identity, and its final loss per seed."""

    q: ArchConfig  # the quality model
    base: dict  # what every row of the arm carries (its choices, sizes, corpus)
    id: str  # the seed ledger's key (``arm_id``): two points with the same arm share its seeds
    note: str
    finals: dict[int, float] = field(default_factory=dict)  # seed -> final validation loss
    status: str = "ok"
    peak_flops: float = math.nan  # the machine's matrix-product rate at the step's precision (FLOP/s)


def _arm(tc: TrainConfig, point_base: dict, measured: ArchConfig, q: ArchConfig, variant: str, corpus: Corpus,
         params_baseline: int, step_choice: str = "", peak_flops: float = math.nan) -> _Arm:
    """The arm of ``measured`` (the point's block at the measurement's sizes), trained as ``q`` (at the quality
    sizes)."""
    aid = arm_id(q, tc, corpus.sha256)
    base = {**point_base, **{k: v for choice in choices() for k, v in row_values(choice, measured).items()}}
    base.update(variant=variant, tie_embeddings=measured.model.tie_embeddings, d_model=q.model.d_model,
                n_layers=q.model.n_layers, n_heads=q.model.n_heads, n_kv_heads=q.n_kv_heads, ffn_hidden=q.ffn_hidden,
                attn=q.attn.name, params=_params(q), params_baseline=params_baseline,
                dtype=tc.precision, compile=True if tc.compile else None,
                attention_core=tc.attention_core if tc.precision != "float32" else None, step_choice=step_choice,
                batch=tc.batch, seq_len=tc.context, corpus=corpus.sha256, vocab_size=q.model.vocab_size, arm=aid,
                train_flops_step=step_flops(q, tc), train_steps=int(tc.steps))
    note = (f"quality model (train={tc.name}): d={q.model.d_model}, {q.model.n_layers} layers, "
            f"{q.n_kv_heads} KV of {q.model.n_heads} heads (point: {measured.n_kv_heads} of "
            f"{measured.model.n_heads})")
    return _Arm(q, base, aid, note, peak_flops=peak_flops)


def _run_seeds(plan: QualityPlan, rows: Rows, device: torch.device, ledger: Ledger) -> str:
    tc, pair = plan.train, plan.pair
    rule = seed_rule(tc)
    family = family_size(tc)
    corpus = open_corpus(plan.data)
    params_baseline = _params(plan.baseline)
    step = (plan.step_choice, plan.peak_flops)
    own = _arm(tc, rows.base, pair.arch, plan.arch, rows.base["variant"], corpus, params_baseline, *step)
    ref = _arm(tc, rows.base, pair.baseline, plan.baseline, pair.baseline_name, corpus, params_baseline, *step)
    source = (f"; corpus: {corpus.source}, {len(corpus.train)} B train, {len(corpus.val)} B validation"
              if corpus.unit == "byte" else f"; corpus: {corpus.source}")
    own.note += source
    ref.note += source
    spans = validation_spans(corpus, tc)
    # The baseline itself pairs with nothing: its seeds are the first look's, and the points that compare with it
    # add the rest. Every other point trains its baseline's seeds too (found in the ledger when the sweep's baseline
    # point trained them), so a point run on its own is a comparison, with fixed seeds as with sequential ones.
    paired = ref.id != own.id
    stopped, tried = None, 0
    for seed in rule.seeds:
        tried += 1
        _seed(own, seed, tc, corpus, spans, device, ledger, rows)
        if paired:
            _seed(ref, seed, tc, corpus, spans, device, ledger, rows)
        if not rule.sequential:
            stopped = rule.stop(tried, None, family)
        elif not paired:
            stopped = BASELINE if tried >= rule.looks[0] else None
        else:
            stopped = rule.stop(tried, paired_test(own.finals, ref.finals), family)
        if stopped:
            break
    if rule.sequential:
        log.info("quality %s: %d seed(s), %s", own.base["variant"], tried, STOPS[stopped])
    for row in rows.rows:  # the point's own final losses say how its seeds ended
        if row.get("arm") == own.id and row["metric"] == "val_loss" and row["mode"] == "final":
            row.update(stopped=stopped, looks=len(rule.looks), target_mde=rule.target_mde)
    if tc.budgets:
        _budgets(ref, curve_seeds(tc, rule.seeds[:tried]), tc, corpus, spans, device, ledger, rows)
    if tc.lr_check:
        _lr_check(own, rule.seeds[0], tc, corpus, spans, device, ledger, rows)
    return "failed" if "failed" in (own.status, ref.status) else "ok"


def _seed(arm: _Arm, seed: int, protocol: TrainConfig, corpus: Corpus, spans: torch.Tensor, device: torch.device,
          ledger: Ledger, rows: Rows, tc: TrainConfig | None = None, extras: bool = True) -> list[dict]:
    """One seed of one arm, from the ledger or trained now; its rows are appended to the point's. ``protocol``: the
    point's training settings; ``tc``: another's (a budget run, the learning-rate check). ``extras``: also the
    extrapolation's rows (a budget run needs its final loss only)."""
    tc = tc if tc is not None else protocol
    aid = arm.id if tc is protocol else arm_id(arm.q, tc, corpus.sha256)
    found = ledger.get(aid, seed)
    if found is None:
        seeded = Rows(base=dict(arm.base, seed=int(seed), arm=aid, lr=float(tc.lr)))
        label = f"quality {arm.base['variant']} seed {seed}" + (
            "" if tc is protocol else f" at {tc.steps} steps" if tc.steps != protocol.steps else f" at lr {tc.lr:g}")
        try:
            began = time.perf_counter()
            result = train(arm.q, corpus, tc, int(seed), device, spans, functools.partial(log.info, f"{label} %s"))
            if result.compile_failed:  # the rows say the steps ran eagerly, and why
                eager = f"compile failed, trained eagerly: {result.compile_failed}"
                chosen = seeded.base.get("step_choice")
                seeded.base.update(compile=None, step_choice=f"{chosen}; {eager}" if chosen else eager)
            _result_rows(seeded, result, tc, spans, arm.note, corpus.unit, extras)
            efficiency_rows(seeded, result, tc, arm.peak_flops)
            seeded.add("train_wall_time", time.perf_counter() - began, "s", mode="quality",
                       note="the whole seed: build, training, every evaluation and the extrapolation")
        except RankLost:
            raise
        except Exception as exc:  # this seed is recorded as failed; the others and the sweep go on
            arm.status = _failed(seeded, rows, f"{type(exc).__name__}: {exc}", label)
            return seeded.rows  # not in the ledger: a rerun tries it again
        ledger.put(aid, seed, seeded.rows)
        found = seeded.rows
    else:
        found = reused(found, arm.base)
    rows.rows.extend(found)
    for r in found:
        if r["metric"] == "val_loss" and r["mode"] == "final" and r.get("status") == "ok" and tc is protocol:
            arm.finals[int(seed)] = float(r["value"])
    return found


def budget_train(tc: TrainConfig, factor: float) -> TrainConfig:
    """``tc`` at ``factor`` x its steps, a full schedule: warm-up and cosine decay stretched with it, validation only
    at the start and the end (the curve needs the final loss alone)."""
    steps = max(1, round(int(tc.steps) * float(factor)))
    warmup = min(steps - 1, round(int(tc.warmup) * steps / int(tc.steps)))
    return replace(tc, steps=steps, warmup=warmup, eval_interval=steps, log_interval=min(int(tc.log_interval), steps))


def curve_seeds(tc: TrainConfig, used: tuple[int, ...] | list[int]) -> list[int]:
    """The seeds the baseline's budget curve is trained on: the first ``budget_seeds`` of those the point used."""
    n = tc.budget_seeds
    return list(used if n is None else used[: int(n)])


def _budgets(ref: _Arm, seeds: list[int], protocol: TrainConfig, corpus: Corpus, spans: torch.Tensor,
             device: torch.device, ledger: Ledger, rows: Rows) -> None:
    """The baseline at each ``train.budgets`` multiple of the steps, per curve seed: the loss-versus-compute curve
    the compute multiplier is read from (``ablations.quality.multiplier``). Scored on the same validation bytes.
    Then at each ``train.check_budgets`` multiple: known answers between the curve's knots, read as a variant is."""
    runs = [(float(b), BUDGET_METRICS) for b in protocol.budgets] + [(float(b), CHECK_METRICS)
                                                                    for b in protocol.check_budgets]
    for seed in seeds:
        for factor, metrics in sorted(runs, key=lambda run: run[0]):
            if factor == 1:
                continue  # the seed itself
            tc = budget_train(protocol, factor)
            labels = dict(mode="budget", budget=factor, point=ref.base.get("point"))
            for r in _seed(ref, seed, protocol, corpus, spans, device, ledger, Rows(base={}), tc, extras=False):
                if r["metric"] in ("val_loss", "train_wall_time") and r.get("mode") in ("final", "quality"):
                    rows.rows.append(dict(r, metric=metrics[r["metric"]], **labels))
                elif r["metric"] == "error":
                    rows.rows.append(dict(r, **labels))


def _lr_check(arm: _Arm, seed: int, protocol: TrainConfig, corpus: Corpus, spans: torch.Tensor, device: torch.device,
              ledger: Ledger, rows: Rows) -> None:
    """One seed at ``LR_FACTORS`` x ``train.lr``: whether the shared rate suits this arm (the report flags one
    whose best rate is another). The factor 1 run is the seed itself."""
    for factor in LR_FACTORS:
        if factor == 1:
            continue
        tc = replace(protocol, lr=float(protocol.lr) * factor)
        for r in _seed(arm, seed, protocol, corpus, spans, device, ledger, Rows(base={}), tc):
            if r["metric"] == "val_loss" and r["mode"] == "final":
                rows.rows.append(dict(r, metric="lr_check_loss", mode="lr_check", point=arm.base["point"]))


def _failed(seeded: Rows, rows: Rows, error: str, label: str) -> str:
    log.error("%s failed: %s", label, error)
    log.debug("%s", traceback.format_exc())
    seeded.rows.clear()  # partial rows of a failed seed would mix with the others' complete ones
    seeded.add("error", None, "", mode="quality", status="failed", error=error)
    rows.rows.extend(seeded.rows)
    return "failed"


def _result_rows(rows: Rows, result: TrainResult, tc: TrainConfig, spans: torch.Tensor, note: str,
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
    for ex in extrapolate(result.model, curve_spans(spans, tc), tc.context, list(tc.extrapolation), tc.batch):
        if ex.loss is None:
            rows.add("extrap_loss", math.nan, nats, mode="extrapolation", seq_len=ex.seq_len, statistic="cannot",
                     note=f"learned positions have no vector past position {tc.context - 1}")
            continue
        rows.add("extrap_loss", ex.loss, nats, mode="extrapolation", seq_len=ex.seq_len, statistic="mean")
        for first, last, value in buckets(ex.by_position, width):
            rows.add("loss_by_position", value, nats, mode="extrapolation", seq_len=ex.seq_len, position=first,
                     statistic="mean", note=f"positions {first}-{last}")
