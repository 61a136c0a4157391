"""A sweep point as the stages take it: the composed config checked and resolved once, at the door
(``ablations.runner.plan_point``), into these typed objects. No stage reads the Hydra config.

    Plan
    ├── pair      the block measured and the block it is paired with (``Pair``)
    ├── machine   device, dtype, threads, compile, launcher (``Machine``)
    ├── timing    the block's measurement: the profile, timed or not (``TimingPlan``; None: ``measure=false``)
    ├── quality   the quality runs: both small models, the training settings, the data (``QualityPlan``; None:
    │             ``train.enabled=false``)
    └── output    the folder, the point's file, the tracker (``Output``)

    SweepEnd      what the sweep's end does: the table, REPORT.md, the tracker (``ablations.sweep.end.finish``)

The profile, training and data settings are the schema's own dataclasses (``ablations.config.schema``), filled by
OmegaConf from the composed config (``OmegaConf.to_object``), so a stage reads ``plan.quality.train.steps`` with a
type an editor can follow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from ablations.config.schema import DataConfig, LoggerConfig, ProfileConfig, TrainConfig
from components import ArchConfig


@dataclass(frozen=True)
class Pair:
    """The block a point measures (``arch``, named ``variant``) and the block it is paired with, in timing and in
    quality (``baseline``, named ``baseline_name``: ``gpt2`` or ``llama2``), at the measurement's sizes."""

    variant: str
    arch: ArchConfig
    baseline_name: str
    baseline: ArchConfig
    # match_params: the variant's FFN was resized to its MHA version's parameters.
    matched: bool = False


@dataclass(frozen=True)
class Machine:
    """Where the point's tensors run; every row records it (``ablations.results.provenance``)."""

    device: torch.device
    dtype: torch.dtype
    threads: int
    compile: bool
    # Hydra's launcher: ``basic`` runs one point at a time; another runs points side by side.
    launcher: str = "basic"


@dataclass(frozen=True)
class TimingPlan:
    """The block's measurement: every family ``profile`` enables, on ``machine``, with ``seed``'s weights and inputs.

    ``untimed`` says why latency is not timed here (points or processes side by side would time each other); empty
    when it is. FLOPs, memory and parameters run either way."""

    pair: Pair
    machine: Machine
    profile: ProfileConfig
    seed: int
    untimed: str = ""

    @property
    def timed(self) -> bool:
        return not self.untimed


@dataclass(frozen=True)
class QualityPlan:
    """The quality runs: the small language models of the point's pair (``arch`` and ``baseline``: ``pair``'s blocks at
    the quality sizes ``train`` sets), trained on ``data`` with ``train``'s protocol, seed by seed."""

    pair: Pair
    arch: ArchConfig
    baseline: ArchConfig
    train: TrainConfig
    data: DataConfig
    # The quality step's timing (``ablations.measure.quality_step``) draws its batch from this seed.
    seed: int = 0
    # Set where the run starts (``ablations.quality.precision.resolved``): why the training step runs as ``train``
    # says (each ``auto`` measured), and the matrix-product peak at its precision (FLOP/s) its efficiency is read
    # against.
    step_choice: str = ""
    peak_flops: float = math.nan


@dataclass(frozen=True)
class Output:
    """Where the point's rows go: ``point`` inside ``folder``; ``logger``: the tracker a finished sweep is also
    logged to, with ``settings`` (``settings_of``) as the point's parameters."""

    folder: Path
    point: Path
    logger: LoggerConfig | None = None
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """One sweep point, checked: what each stage takes."""

    sweep: str
    profile: str
    seed: int
    pair: Pair
    machine: Machine
    timing: TimingPlan | None
    quality: QualityPlan | None
    output: Output


@dataclass(frozen=True)
class SweepEnd:
    """The end of a sweep: the table collected in ``folder``, REPORT.md (drawing its figures unless ``figures`` is
    off), and ``logger``'s tracker, if any, with ``settings`` as the sweep's parameters."""

    folder: Path
    sweep: str = "adhoc"
    figures: bool = True
    logger: LoggerConfig | None = None
    settings: dict[str, Any] = field(default_factory=dict)


def sweep_end(cfg: DictConfig, folder: Path) -> SweepEnd:
    """What the end of the sweep ``cfg`` composes writes into ``folder``: its table, report and tracker."""
    logger = logger_of(cfg)
    return SweepEnd(folder, str(cfg.get("sweep_name", "adhoc")), bool(cfg.get("figures", True)), logger,
                    settings_of(cfg) if logger is not None else {})


def with_family(plan: Plan, family: int) -> Plan:
    """The point's plan with its seeds held to its sweep's ``family`` of comparisons (``ablations.quality.seeds``)."""
    if plan.quality is None:
        return plan
    settings = plan.output.settings  # a tracker logs the family the point's seeds were held to
    if "train" in settings:
        settings = {**settings, "train": {**settings["train"], "family": family}}
    return replace(plan, quality=replace(plan.quality, train=replace(plan.quality.train, family=family)),
                   output=replace(plan.output, settings=settings))


def settings_of(cfg: DictConfig) -> dict[str, Any]:
    """The composed config resolved key by key, less Hydra's node (whose values only a running job has): a run's
    parameters as a tracker logs them."""
    return {k: OmegaConf.to_container(cfg[k], resolve=True, enum_to_str=True) if OmegaConf.is_config(cfg[k])
            else cfg[k] for k in cfg if k != "hydra"}


def logger_of(cfg: DictConfig) -> LoggerConfig | None:
    """``+logger=NAME``'s settings; None without one."""
    return OmegaConf.to_object(cfg.logger) if cfg.get("logger") is not None else None
