"""The quality runs of one sweep point: one training run per seed, as long-form rows.

Quality rows describe the quality model, not the measurement model: their size columns (d_model, n_layers,
n_heads, n_kv_heads, ffn_hidden, params, params_baseline) are the small model's, ``batch``/``seq_len`` the
training shape, ``dtype`` float32 (training is always fp32 here, so a bf16 measurement sweep does not change
the losses), ``compile`` empty (the quality model always trains eagerly; ``compile=true`` is the
measurement's) and ``corpus`` the sha256 of the training text. A failing seed becomes a ``failed`` row and the
other seeds still run; a diverging seed is a ``diverged`` row, a result rather than a failure. A corpus that
cannot be read is the environment's fault, not the point's: ``CorpusError`` stops the run.
"""

from __future__ import annotations

import functools
import logging
import math
import time
import traceback

import torch
from omegaconf import DictConfig

from ablations.config.variants import baseline_from
from ablations.quality.arch import quality_arch
from ablations.quality.data import CorpusError, load_corpus
from ablations.quality.extrapolation import buckets, extrapolate
from ablations.quality.train import TrainResult, train, validation_spans
from ablations.results.rows import Rows
from components import ArchConfig, build_lm, count_parameters

log = logging.getLogger("ablations")
NATS, BITS = "nats/byte", "bits/byte"


def _params(arch: ArchConfig) -> int:
    return count_parameters(build_lm(arch, device="meta"))


def run_quality(cfg: DictConfig, arch: ArchConfig, rows: Rows, device: torch.device) -> str:
    """Train the point's quality model once per ``train.seeds``; append the rows; ``ok`` or ``failed``."""
    try:
        return _run_seeds(cfg, arch, rows, device)
    except CorpusError:  # every later point would read the same file: stop with one line, not N failed points
        raise
    except Exception as exc:  # whatever escaped the per-seed guard is this point's failure, not the sweep's
        return _failed(Rows(base=rows.base), rows, f"{type(exc).__name__}: {exc}", f"quality {rows.base['variant']}")


def _run_seeds(cfg: DictConfig, arch: ArchConfig, rows: Rows, device: torch.device) -> str:
    tc = cfg.train
    q = quality_arch(cfg, arch)
    base = dict(rows.base, d_model=q.model.d_model, n_layers=q.model.n_layers, n_heads=q.model.n_heads,
                n_kv_heads=q.n_kv_heads, ffn_hidden=q.ffn_hidden, attn=q.attn.name, params=_params(q),
                params_baseline=_params(quality_arch(cfg, baseline_from(cfg, arch))), dtype="float32", compile=None,
                batch=tc.batch, seq_len=tc.context)
    note = (f"quality model (train={tc.name}): d={q.model.d_model}, {q.model.n_layers} layers, "
            f"{q.n_kv_heads} KV of {q.model.n_heads} heads (point: {arch.n_kv_heads} of {arch.model.n_heads})")
    status = "ok"
    corpus = load_corpus(cfg.data.path, cfg.data.val_fraction)
    base["corpus"] = corpus.sha256
    note += f"; corpus: {corpus.source}, {len(corpus.train)} B train, {len(corpus.val)} B validation"
    spans = validation_spans(corpus, tc)
    for seed in tc.seeds:
        seeded = Rows(base=dict(base, seed=int(seed)))
        label = f"quality {rows.base['variant']} seed {seed}"
        try:
            began = time.perf_counter()
            result = train(q, corpus, tc, int(seed), device, spans, functools.partial(log.info, f"{label} %s"))
            _result_rows(seeded, result, tc, spans, note)
            seeded.add("train_wall_time", time.perf_counter() - began, "s", mode="quality",
                       note="the whole seed: build, training, every evaluation and the extrapolation")
            rows.rows.extend(seeded.rows)
        except Exception as exc:  # this seed is recorded as failed; the others and the sweep go on
            status = _failed(seeded, rows, f"{type(exc).__name__}: {exc}", label)
    return status


def _failed(seeded: Rows, rows: Rows, error: str, label: str) -> str:
    log.error("%s failed: %s", label, error)
    log.debug("%s", traceback.format_exc())
    seeded.rows.clear()  # partial rows of a failed seed would mix with the others' complete ones
    seeded.add("error", None, "", mode="quality", status="failed", error=error)
    rows.rows.extend(seeded.rows)
    return "failed"


def _result_rows(rows: Rows, result: TrainResult, tc: DictConfig, spans: torch.Tensor, note: str) -> None:
    for metric, step, value in result.curve:
        rows.add(metric, value, NATS, mode="curve", step=step, statistic="mean")
        rows.add(metric.replace("_loss", "_bpb"), value / math.log(2), BITS, mode="curve", step=step,
                 statistic="mean")
    if result.diverged_at is not None:
        log.warning("quality %s seed %s diverged: %s", rows.base["variant"], rows.base["seed"], result.reason)
        rows.add("val_loss", math.nan, NATS, mode="final", step=result.diverged_at, statistic="diverged",
                 status="diverged", error=result.reason, note=note)
        return
    rows.add("val_loss", result.final_val, NATS, mode="final", step=tc.steps, statistic="mean", note=note)
    rows.add("val_bpb", result.final_val / math.log(2), BITS, mode="final", step=tc.steps, statistic="mean")
    rows.add("train_tokens_per_s", result.tokens / result.train_seconds, "tokens/s", mode="quality",
             note="training steps only (evaluation excluded)")
    width = tc.context // tc.position_buckets
    for ex in extrapolate(result.model, spans, tc.context, list(tc.extrapolation), tc.batch):
        if ex.loss is None:
            rows.add("extrap_loss", math.nan, NATS, mode="extrapolation", seq_len=ex.seq_len, statistic="cannot",
                     note=f"learned positions have no vector past position {tc.context - 1}")
            continue
        rows.add("extrap_loss", ex.loss, NATS, mode="extrapolation", seq_len=ex.seq_len, statistic="mean")
        for first, last, value in buckets(ex.by_position, width):
            rows.add("loss_by_position", value, NATS, mode="extrapolation", seq_len=ex.seq_len, position=first,
                     statistic="mean", note=f"positions {first}-{last}")
