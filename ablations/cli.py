"""``blockbench run`` (``python -m ablations``): check every point first, then hand over to Hydra.

Hydra reports a bad override over several lines and only composes a sweep's points one batch at a time;
our cross-field rules would otherwise fail at the first bad point after the good ones had run. So the
whole sweep is expanded and checked up front, exactly as Hydra's basic sweeper will expand it, and so are
the output folders; the first problem is printed as one line naming the key, with exit status 2 and no
traceback. A fault of the environment once work has started (a full disk, a corpus gone) stops the run
with one line and exit status 1 (``ablations.config.errors``: ``blockbench run: error: ...``).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path

import hydra
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ablations.config.checks import check_keys
from ablations.config.errors import Fault, UsageError, command, os_error_line
from ablations.config.paths import conf_dir
from ablations.config.run_config import RunConfig
from ablations.config.schema import BaselineConfig, DataConfig, LoggerConfig, ModelSizes, ProfileConfig, TrainConfig
from ablations.config.store import register_configs
from ablations.results.durable import probe_folder
from ablations.runner import plan_point
from blockbench import choices
from components.baselines import BASELINES

CONF_DIR = conf_dir()
CONFIG_NAME = "config"
# Flags with which Hydra prints something instead of running; nothing to check then.
_INFO_FLAGS = ("--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "-i", "--resolve", "--shell-completion", "-sc")

register_configs()

_NOISE = ("object_type=", "reference_type=", "Set the environment", "provider=", "path=", "full_key:",
          "To append to your config")
_SCHEMAS = {cls.__name__: cls for cls in (RunConfig, ModelSizes, *(choice.config for choice in choices()),
                                          ProfileConfig, TrainConfig, DataConfig, BaselineConfig, LoggerConfig)}


def one_line(exc: BaseException) -> str:
    """Hydra and OmegaConf spread an error over several lines and chained causes; keep what names the
    key, what was wrong, and what is allowed."""
    parts: list[str] = []
    err: BaseException | None = exc
    for _ in range(2):  # the error and its first cause; deeper ones repeat them as templates
        if err is None:
            break
        text = str(err)
        options = re.findall(r"Available options in '([^']+)':\s*\n((?:\s+\S+\n?)+)", text)
        keep = []
        for ln in (ln.strip() for ln in text.splitlines()):
            if ln.startswith(("Config search path", "Available options")):
                break
            if not ln or "$VALUE" in ln or ln.startswith(_NOISE):
                continue
            keep.append(re.sub(r"^In '[^']+': ", "", ln))
        msg = " ".join(keep)
        for group, block in options:
            msg += f" (available options in '{group}': {', '.join(block.split())})"
        unknown = re.search(r"Key '(\w+)' not in '(\w+)'", msg)
        if unknown and unknown.group(2) in _SCHEMAS and "(allowed keys:" not in msg:
            msg += f" (allowed keys: {', '.join(f.name for f in fields(_SCHEMAS[unknown.group(2)]))})"
        if msg and msg not in parts:
            parts.append(msg.rstrip("."))
        err = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
    return "; ".join(parts)


def expand_jobs(loader: object, primary: DictConfig, overrides: list[str], multirun: bool) -> list[list[str]]:
    """The override list of each job, as Hydra's basic sweeper will produce them."""
    if not (multirun or primary.hydra.mode == RunMode.MULTIRUN):
        return [overrides]
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    params = [f"{k}={v}" for k, v in (primary.hydra.sweeper.get("params") or {}).items()]
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(params + overrides)
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def with_baseline_variant(argv: list[str]) -> list[str]:
    """``baseline=NAME`` without a variant makes that block the point as well as its pair, so a one-choice sweep
    flips the choice on it (``+sweep=norm baseline=llama2``: Llama-2's block with each norm). Hydra cannot do this
    in the defaults list (a group chosen by interpolation may not override other groups, and variants do); a sweep
    that lists its own variants, or a variant on the command line, keeps them."""
    named = [a.split("=", 1)[1] for a in argv if a.split("=")[0].lstrip("+") == "baseline"]
    if len(named) != 1 or named[0] not in BASELINES or any(a.split("=")[0].lstrip("+~") == "variant" for a in argv):
        return argv
    sweep = [a.split("=", 1)[1] for a in argv if a.split("=")[0] == "+sweep"]
    if sweep:
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="ablations"):
                loader = GlobalHydra.instance().config_loader()
                primary = loader.load_configuration(CONFIG_NAME, [f"+sweep={sweep[0]}"], run_mode=RunMode.MULTIRUN)
                if "variant" in (primary.hydra.sweeper.get("params") or {}):
                    return argv
        except Exception:  # an unknown sweep: prevalidate reports it in its one line
            return argv
        finally:
            GlobalHydra.instance().clear()
    return [*argv, f"variant={named[0]}"]


@dataclass(frozen=True)
class CheckedRun:
    """What checking every point of a run finds out about the run as a whole."""

    points: int
    # The final-loss comparisons the sweep makes (``ablations.quality.seeds.family_of``): every point's seeds are held
    # to it, so it reaches each point as ``train.family``.
    family: int


def prevalidate(argv: list[str]) -> int | None:
    """Check every point of the run described by ``argv``; return how many points there are."""
    run = check_every_point(argv)
    return None if run is None else run.points


def check_every_point(argv: list[str]) -> CheckedRun | None:
    """Check every point of the run described by ``argv`` (None where a flag prints instead of running)."""
    if any(a.split("=")[0] in _INFO_FLAGS for a in argv):
        return None
    multirun = "-m" in argv or "--multirun" in argv
    overrides = [a for a in argv if not a.startswith("-")]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="ablations"):
            loader = GlobalHydra.instance().config_loader()
            primary = loader.load_configuration(CONFIG_NAME, overrides, run_mode=RunMode.MULTIRUN)
            jobs = expand_jobs(loader, primary, overrides, multirun)
            multirun = multirun or primary.hydra.mode == RunMode.MULTIRUN
            folders: dict[str, str] = {}
            points: dict[Path, set[str]] = {}
            compared = 0
            for job in jobs:
                cfg = loader.load_sweep_config(primary, job) if len(jobs) > 1 or multirun else primary
                check_keys(cfg, job)
                OmegaConf.resolve(cfg)
                folder = Path(cfg.out) if cfg.get("out") else Path(OmegaConf.select(cfg, "hydra.sweep.dir"))
                plan = plan_point(cfg, folder)
                # A comparison with its baseline (the baseline point itself is not one).
                compared += plan.quality is not None and plan.pair.variant != plan.pair.baseline_name
                folders.update(output_folders(cfg, multirun))
                if multirun:
                    points.setdefault(folder, set()).add(plan.output.point.stem)
    except SystemExit:
        raise
    except Exception as exc:  # Hydra, OmegaConf and our ConfigError all describe the user's input
        raise UsageError(one_line(exc)) from None
    finally:
        GlobalHydra.instance().clear()
    for path, key in folders.items():
        problem = probe_folder(Path(path))
        if problem:
            raise UsageError(f"{key}={path}: {problem}")
    for folder, expected in points.items():
        check_foreign_points(folder, expected)
    from ablations.quality.seeds import family_of

    return CheckedRun(len(jobs), family_of(str(cfg.sweep_name), compared))


def skip_the_basic_sweepers_second_check() -> None:
    """Hydra's basic sweeper composes every job of a batch before it launches it (``validate_batch_is_legal``), to
    fail before any job runs; ``prevalidate`` has just composed and checked those very jobs (``expand_jobs`` splits
    the overrides as the basic sweeper does) and more strictly, and each job is composed once more at its launch.
    So that check is a third composition of every point for nothing. Other sweepers keep their checks."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    BasicSweeper.validate_batch_is_legal = lambda self, batch: None  # type: ignore[method-assign]


def check_foreign_points(folder: Path, expected: set[str]) -> None:
    """A sweep into a folder that holds points of another configuration would pool them into one table: refuse."""
    from ablations.results.table import POINTS_DIR

    foreign = sorted(p.name for p in (folder / POINTS_DIR).glob("*.csv") if p.stem not in expected)
    if foreign:
        raise UsageError(
            f"hydra.sweep.dir={folder}: holds {len(foreign)} point file(s) of another configuration than this "
            f"sweep's (e.g. {foreign[0]}), which its table would pool with this sweep's points; sweep into a new "
            f"folder, or move {folder / POINTS_DIR}/ aside")


def output_folders(cfg: DictConfig, multirun: bool) -> dict[str, str]:
    """Each folder a job writes in, with the key that sets it: Hydra's (its ``.hydra/`` records, and the points
    unless ``out=`` is set) and ``out``."""
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    folders = {str(OmegaConf.select(cfg, key)): key}
    if cfg.out:
        folders[str(cfg.out)] = "out"
    return folders


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=CONFIG_NAME)
def hydra_main(cfg: DictConfig) -> str:
    from ablations.runner import run_job

    try:
        return run_job(cfg)
    except OSError as exc:  # the environment's, not the point's: every later point would meet it too
        raise Fault(os_error_line(exc)) from None


def under_torchrun(argv: list[str]) -> list[str]:
    """Under ``torchrun`` with several processes: join the process group, and give every rank rank 0's output
    folder (Hydra names it by the clock, which may tick between ranks); ranks past 0 leave Hydra's config records to
    rank 0. Outside torchrun ``argv`` unchanged."""
    from ablations.quality import distributed

    if distributed.requested() == 1 or any(a.split("=")[0] in _INFO_FLAGS for a in argv):
        return argv
    distributed.start("cpu" if "device=cpu" in argv else "auto")
    named = {a.split("=")[0].lstrip("+") for a in argv}
    stamp = distributed.from_writer(time.strftime("%Y-%m-%d_%H-%M-%S"))
    extra = [f"hydra.{mode}.dir=results/runs/${{sweep_name}}/{stamp}" for mode in ("run", "sweep")
             if f"hydra.{mode}.dir" not in named]
    if distributed.rank() > 0:
        extra.append("hydra.output_subdir=null")
    return [*argv, *extra]


@command("run")
def main(argv: list[str] | None = None) -> None:
    argv = under_torchrun(with_baseline_variant(sys.argv[1:] if argv is None else argv))
    run = check_every_point(argv)
    if run is not None:  # the quality seeds' stopping rule holds each comparison at the sweep's family-wise level
        argv = [*argv, f"train.family={run.family}", f"hydra.callbacks.collect.expected_points={run.points}"]
    skip_the_basic_sweepers_second_check()
    from ablations.measure.ceilings import forget_run

    forget_run()  # this run measures its own ceilings, once, at its first timed point
    sys.argv = [sys.argv[0], *argv]
    # Hydra prints any exception of its own work (creating a job's folder, writing its .hydra/ records) with a
    # traceback unless this is "1"; then it raises it, and a fault of the disk becomes one line below. Set whatever
    # the caller's environment holds: with HYDRA_FULL_ERROR=0 exported, Hydra printed its traceback.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    # A log file on a full disk would print logging's own traceback for every record.
    logging.raiseExceptions = False
    try:
        hydra_main()
    except BrokenPipeError:
        raise  # ``--help | head``: the reader left (``command`` says nothing more)
    except OSError as exc:
        raise Fault(os_error_line(exc)) from None
