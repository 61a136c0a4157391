"""One Hydra job = one sweep point: measure it, write its rows atomically, never take the sweep down for the
point's own failure. An OSError (a full disk, a corpus gone) is the environment's: it escapes, and the CLI stops
the run with one line."""

from __future__ import annotations

import logging
import os
import traceback
from pathlib import Path

import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from ablations.config.checks import check_run, resolve_device, resolve_dtype
from ablations.config.columns import row_values
from ablations.config.errors import Fault
from ablations.config.variants import variant_label
from ablations.measure.intervals import precision_of
from ablations.measure.point import measure_point
from ablations.measure.quality_step import measure_quality_step
from ablations.quality import distributed
from ablations.quality.arch import check_quality
from ablations.quality.data import check_data, open_corpus
from ablations.results.identity import point_identity
from ablations.results.provenance import provenance
from ablations.results.rows import Rows
from ablations.results.store import config_hash, point_done, point_path, write_point
from ablations.track import check_logger
from components import ArchConfig, choices
from components.config import ConfigError

log = logging.getLogger("ablations")

def output_folder(cfg: DictConfig) -> Path:
    """Where points and the table go: ``out=`` if given, else Hydra's sweep folder (or run folder)."""
    if cfg.get("out"):
        return Path(cfg.out)
    hc = HydraConfig.get()
    if hc.mode == RunMode.MULTIRUN:
        return Path(hc.sweep.dir)
    return Path(hc.runtime.output_dir)


def launcher_name() -> str:
    if not HydraConfig.initialized():
        return "basic"
    return HydraConfig.get().runtime.choices.get("hydra/launcher", "basic") or "basic"


def check_point(cfg: DictConfig) -> ArchConfig:
    """Every rule for one point: the measurement's, then the quality run's when it trains."""
    arch = check_run(cfg)
    precision_of(cfg.profile)  # the rounds rule's settings, refused here before any work
    check_logger(cfg)
    ranks = distributed.requested()
    if cfg.train.enabled and cfg.train.batch % ranks:
        raise ConfigError(f"train.batch={cfg.train.batch} must divide evenly among the {ranks} torchrun processes "
                          "(each rank trains an equal shard of the global batch)")
    if cfg.train.enabled:
        # The data first: its vocabulary is the quality model's.
        check_data(cfg.data, cfg.train.context, max(cfg.train.extrapolation))
        check_quality(cfg, arch)
    return arch


def run_job(cfg: DictConfig) -> str:
    """Measure the point ``cfg`` describes and run its quality runs; returns ``ok``, ``failed`` or ``skipped``."""
    arch = check_point(cfg)
    device = resolve_device(cfg)
    dtype = resolve_dtype(cfg, device)
    threads = cfg.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    launcher = launcher_name()
    timing = launcher == "basic" or bool(cfg.allow_parallel_timing)
    if distributed.world_size() > 1:
        timing = False
        log.warning("torchrun runs %d processes side by side, so their timings would measure each other: latency, "
                    "throughput and decode timing are SKIPPED (FLOPs, memory and parameters still run); time with "
                    "one process.", distributed.world_size())
    elif not timing:
        log.warning(
            "launcher %s runs points side by side, so their timings would measure each other: latency, "
            "throughput and decode timing are SKIPPED (FLOPs, memory and parameters still run). Use the basic "
            "launcher for timing, or allow_parallel_timing=true to time anyway.", launcher,
        )

    variant = variant_label(arch, matched=bool(cfg.match_params))
    # Under torchrun rank 0's folder and decisions are every rank's (its clock named the folder).
    folder = distributed.from_writer(output_folder(cfg))
    path = point_path(folder, variant, config_hash(point_identity(cfg)))
    if cfg.get("logger") is not None and distributed.is_writer():  # its run's parameters, also for a point done before
        from ablations.track.plan import save_point_config

        save_point_config(folder, path.stem, cfg)
    if distributed.from_writer(point_done(path)):
        log.info("point %s already measured in %s: skipped", variant, path)
        return "skipped"

    rows = Rows(base={
        "sweep": cfg.sweep_name, "variant": variant, "point": path.stem, "baseline": cfg.baseline.name,
        **{k: v for c in choices() for k, v in row_values(c, arch).items()},
        "tie_embeddings": arch.model.tie_embeddings, "d_model": arch.model.d_model, "n_layers": arch.model.n_layers,
        "n_heads": arch.model.n_heads, "ffn_hidden": arch.ffn_hidden, "seed": cfg.seed,
        "profile": cfg.profile.name,
        **provenance(device, dtype, threads, bool(cfg.compile), launcher),
    })
    if cfg.train.enabled:
        # Read (and cache) the corpus first: one that cannot be read stops the run (CorpusError) before the
        # measurement's minutes are spent on a point that could not be finished.
        open_corpus(cfg.data)
    status = "ok"
    if cfg.measure:
        try:
            measure_point(cfg, arch, device, dtype, rows, timing)
            if timing and cfg.train.enabled and cfg.profile.get("quality_step", True):
                # Time to loss's denominator: the quality model's training step, timed here where the block's are.
                measure_quality_step(cfg, arch, device, rows)
        except Exception as exc:  # a failing point is recorded and the sweep goes on
            status = "failed"
            kind = "out of memory" if isinstance(exc, torch.OutOfMemoryError) else type(exc).__name__
            log.error("point %s failed: %s: %s", variant, kind, exc)
            log.debug("%s", traceback.format_exc())
            rows.add("error", None, "", status="failed", error=f"{kind}: {exc}")
    if cfg.train.enabled:
        # Independent of the measurement (its own small model), so it runs even where that failed; a failing
        # seed is recorded inside and never raises. Same point file: written once, below.
        from ablations.quality.run import run_quality

        try:
            if run_quality(cfg, arch, rows, device, folder) == "failed":
                status = "failed"
        except distributed.RankLost as exc:  # the points before it are written; this one cannot finish
            raise Fault(f"point {variant} failed: {exc}; the points before it are in {folder}") from None
    if not distributed.is_writer():
        return status
    write_point(rows.rows, path)
    # A single run's table, summary and folder line come from the callback (``SweepCallback.on_job_end``), after
    # the point's own line, as a multirun's come after all of its points'.
    return status
