"""One Hydra job = one sweep point: ``run_job`` checks the composed config once and resolves it into a ``Plan``
(``plan_point``, the door: no stage reads the config), measures the block, trains the quality models, and writes
the point's rows atomically; never takes the sweep down for the point's own failure. An OSError (a full disk, a
corpus gone) is the environment's: it escapes, and the CLI stops the run with one line."""

from __future__ import annotations

import logging
import os
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from ablations.config.checks import baseline_from, check_run, resolve_device, resolve_dtype
from ablations.config.columns import row_values
from ablations.config.errors import Fault, os_error_line
from ablations.config.plan import (
    Machine,
    Output,
    Pair,
    Plan,
    QualityPlan,
    TimingPlan,
    logger_of,
    settings_of,
    with_family,
)
from ablations.measure.graphs import check_graphs
from ablations.measure.intervals import rounds_rule_of
from ablations.measure.point import measure_point
from ablations.measure.quality_step import measure_quality_step
from ablations.quality import distributed
from ablations.quality.arch import check_train, quality_pair
from ablations.quality.data import open_corpus
from ablations.quality.data_checks import check_data
from ablations.quality.precision import resolved
from ablations.results.identity import point_identity
from ablations.results.provenance import provenance
from ablations.results.rows import Rows
from ablations.results.store import config_hash, point_done, point_path, write_point
from ablations.results.sweep_record import read_sweep_record
from ablations.results.variant_labels import variant_label
from ablations.track import check_logger
from ablations.track.runs import save_point_config
from blockbench import choices
from components import ArchConfig
from components.config import ConfigError
from components.declarations import outside_the_decoder

log = logging.getLogger("ablations")


def run_job(cfg: DictConfig) -> str:
    """A point a launcher started in its own process (joblib, submitit): its config as Hydra composed it there, its
    family from the sweep's record beside the points (``ablations.results.sweep_record``). Returns ``run_plan``'s."""
    # Under torchrun rank 0's folder is every rank's (its clock named the folder).
    folder = distributed.from_writer(output_folder(cfg))
    plan = plan_point(cfg, folder)
    record = read_sweep_record(folder)
    return run_plan(plan if record is None else with_family(plan, record.family))


def run_point(plan: Plan) -> str:
    """``run_plan`` as the sweep runs it: a fault of the environment (a full disk, a corpus gone) stops the run with
    one line, since every later point would meet it too."""
    try:
        return run_plan(plan)
    except OSError as exc:
        raise Fault(os_error_line(exc)) from None


def run_plan(plan: Plan) -> str:
    """One sweep point, checked: measure the block against its baseline, train both quality models, write the rows
    once. Returns ``ok``, ``failed`` or ``skipped`` (measured before)."""
    torch.set_num_threads(plan.machine.threads)
    if plan.timing is not None and not plan.timing.timed:
        log.warning("%s", plan.timing.untimed)
    out = plan.output
    if out.logger is not None and distributed.is_writer():  # its run's parameters, also for a point done before
        save_point_config(out.folder, out.point.stem, out.settings)
    if distributed.from_writer(point_done(out.point)):
        log.info("point %s already measured in %s: skipped", plan.pair.variant, out.point)
        return "skipped"
    rows = Rows(base=point_columns(plan))
    if plan.quality is not None:
        # A corpus that cannot be read stops the run (CorpusError) before the measurement's minutes are spent.
        open_corpus(plan.quality.data)
        # Every ``auto`` of the training step measured once for the process: the timed step and the seeds run alike.
        plan = replace(plan, quality=resolved(plan.quality, plan.machine.device))
        log.info("quality step: %s", plan.quality.step_choice)
    status = "ok"
    if plan.timing is not None:
        status = measure(plan.timing, plan.quality, rows)
    if plan.quality is not None:
        # Its own small models, so it runs even where the measurement failed; a failing seed is a row, not a raise.
        status = train_quality(plan.quality, rows, plan.machine.device, out.folder) or status
    if distributed.is_writer():
        write_point(rows.rows, out.point)
    return status


def plan_point(cfg: DictConfig, folder: Path | None = None) -> Plan:
    """The door: every rule for one point, one line naming the key (the measurement's, the data's and the quality
    run's), and the composed config resolved into the typed objects the stages take. ``folder``: where the point
    goes (``run_job``: the job's ``output_folder``); by default ``out=``, else the working folder."""
    arch = check_run(cfg)
    profile, train, data = (OmegaConf.to_object(cfg[key]) for key in ("profile", "train", "data"))
    rounds_rule_of(profile)  # the rounds rule's settings, refused here before any work
    logger = logger_of(cfg)
    check_logger(logger)
    device = resolve_device(cfg)
    check_graphs(profile.graphs, device)
    machine = Machine(device, resolve_dtype(cfg, device), cfg.threads or os.cpu_count() or 1, bool(cfg.compile),
                      launcher_name(cfg))
    matched = bool(cfg.match_params)
    pair = Pair(variant_label(arch, matched), arch, str(cfg.baseline.name), baseline_from(cfg, arch), matched)
    timing = TimingPlan(pair, machine, profile, int(cfg.seed),
                        untimed_because(machine.launcher, bool(cfg.allow_parallel_timing), pair)) if cfg.measure \
        else None
    quality = None
    if train.enabled:
        ranks = distributed.requested()
        if train.batch % ranks:
            raise ConfigError(f"train.batch={train.batch} must divide evenly among the {ranks} torchrun processes "
                              "(each rank trains an equal shard of the global batch)")
        check_data(data, train.context, max(train.extrapolation))  # first: its vocabulary is the quality model's
        check_train(train, device)
        models = quality_pair(train, data, arch, pair.baseline, matched)
        quality = QualityPlan(pair, *models, train, data, int(cfg.seed))
    folder = Path(cfg.get("out") or ".") if folder is None else folder
    output = Output(folder, point_path(folder, pair.variant, config_hash(point_identity(cfg))), logger,
                    settings_of(cfg) if logger is not None else {})
    return Plan(str(cfg.sweep_name), str(cfg.profile.name), int(cfg.seed), pair, machine, timing, quality, output)


def measure(timing: TimingPlan, quality: QualityPlan | None, rows: Rows) -> str:
    """The block's measurement, and the quality model's training step where the point trains and is timed (time to
    loss's denominator); a failure is recorded as a row and the sweep goes on."""
    try:
        measure_point(timing, rows)
        if timing.timed and quality is not None and timing.profile.quality_step:
            measure_quality_step(timing, quality, rows)
    except Exception as exc:  # a failing point is recorded and the sweep goes on
        kind = "out of memory" if isinstance(exc, torch.OutOfMemoryError) else type(exc).__name__
        log.error("point %s failed: %s: %s", timing.pair.variant, kind, exc)
        log.debug("%s", traceback.format_exc())
        rows.add("error", None, "", status="failed", error=f"{kind}: {exc}")
        return "failed"
    return "ok"


def train_quality(quality: QualityPlan, rows: Rows, device: torch.device, folder: Path) -> str | None:
    """The quality runs; ``failed`` where a seed failed, else None. A lost torchrun rank stops the run."""
    from ablations.quality.run import run_quality

    try:
        return "failed" if run_quality(quality, rows, device, folder) == "failed" else None
    except distributed.RankLost as exc:  # the points before it are written; this one cannot finish
        raise Fault(f"point {quality.pair.variant} failed: {exc}; the points before it are in {folder}") from None


def point_columns(plan: Plan) -> dict[str, Any]:
    """What every row of the point carries: what it is (its choices, sizes, seed, profile) and where it ran."""
    arch, m = plan.pair.arch, plan.machine
    return {
        "sweep": plan.sweep, "variant": plan.pair.variant, "point": plan.output.point.stem,
        "baseline": plan.pair.baseline_name,
        **{k: v for choice in choices() for k, v in row_values(choice, arch).items()},
        "tie_embeddings": arch.model.tie_embeddings, "d_model": arch.model.d_model, "n_layers": arch.model.n_layers,
        "n_heads": arch.model.n_heads, "ffn_hidden": arch.ffn_hidden, "seed": plan.seed, "profile": plan.profile,
        **provenance(m.device, m.dtype, m.threads, m.compile, m.launcher),
    }


def untimed_because(launcher: str, allow_parallel_timing: bool, pair: Pair | None = None) -> str:
    """Why latency is not timed at a point: other points or processes run beside it and would be timed too, or
    ``pair``'s two blocks are the same block (what the variant moves lies outside the timed decoder)."""
    outside = outside_the_decoder(pair.arch, pair.baseline) if pair is not None else []
    if outside:
        return (f"{', '.join(outside)} acts outside the timed decoder, so its block timed against "
                f"{pair.baseline_name}'s would be the same block, an A/A: latency, throughput and decode timing are "
                "SKIPPED (FLOPs, memory and parameters still run; the quality runs take it).")
    if distributed.world_size() > 1:
        return (f"torchrun runs {distributed.world_size()} processes side by side, so their timings would measure "
                "each other: latency, throughput and decode timing are SKIPPED (FLOPs, memory and parameters still "
                "run); time with one process.")
    if launcher != "basic" and not allow_parallel_timing:
        return (f"launcher {launcher} runs points side by side, so their timings would measure each other: latency, "
                "throughput and decode timing are SKIPPED (FLOPs, memory and parameters still run). Use the basic "
                "launcher for timing, or allow_parallel_timing=true to time anyway.")
    return ""


def output_folder(cfg: DictConfig) -> Path:
    """Where the running job's points and table go: ``out=`` if given, else Hydra's sweep folder."""
    return Path(cfg.out) if cfg.get("out") else Path(HydraConfig.get().sweep.dir)


def launcher_name(cfg: DictConfig) -> str:
    """The Hydra launcher that runs the point: its config's choice, else the running job's; ``basic`` outside Hydra."""
    chosen = OmegaConf.select(cfg, "hydra.runtime.choices")
    if chosen is None and HydraConfig.initialized():
        chosen = HydraConfig.get().runtime.choices
    return str((chosen or {}).get("hydra/launcher") or "basic")


def check_point(cfg: DictConfig) -> ArchConfig:
    """Every rule for one point (``plan_point``); the architecture it measures."""
    return plan_point(cfg).pair.arch
