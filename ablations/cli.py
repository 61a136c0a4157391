"""``blockbench run`` (``python -m ablations``): Hydra reads the configuration; blockbench's sweeper
(``ablations.sweep``) composes every point once, checks it, runs it and writes the report.

A problem with the user's input (a bad override, a rule of ours, a folder that cannot be written) is one line naming
the key, with exit status 2 and no traceback, before any point runs. A fault of the environment once work has
started (a full disk, a corpus gone) stops the run with one line and exit status 1 (``ablations.config.errors``:
``blockbench run: error: ...``).
"""

from __future__ import annotations

import logging
import os
import sys
import time

import hydra
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from ablations.config.errors import Fault, UsageError, command, os_error_line
from ablations.config.paths import conf_dir
from ablations.config.register import register_configs
from ablations.sweep.compose import Sweep, compose_sweep, one_line
from components.config import ConfigError

CONF_DIR = conf_dir()
CONFIG_NAME = "config"
# Flags with which Hydra prints something instead of running; nothing to check then.
_INFO_FLAGS = ("--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "-i", "--resolve", "--shell-completion", "-sc")

register_configs()


def plan_run(argv: list[str]) -> Sweep | None:
    """Every point of the run ``argv`` describes, composed and checked as ``blockbench run`` would before running
    it, without running anything (None where a flag prints instead of running)."""
    if any(a.split("=")[0] in _INFO_FLAGS for a in argv):
        return None
    overrides = [a for a in argv if not a.startswith("-")]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="ablations"):
            loader = GlobalHydra.instance().config_loader()
            try:
                primary = loader.load_configuration(CONFIG_NAME, overrides, run_mode=RunMode.MULTIRUN)
            except Exception as exc:
                raise UsageError(one_line(exc)) from None
            return compose_sweep(loader, primary, list(primary.hydra.overrides.task))
    finally:
        GlobalHydra.instance().clear()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=CONFIG_NAME)
def hydra_main(cfg: DictConfig) -> str:
    """A point a launcher runs in its own process; the sweep's own process runs its points from their plans."""
    from hydra.core.hydra_config import HydraConfig

    from ablations.runner import run_job

    if HydraConfig.get().mode == RunMode.RUN:  # Hydra ran the task itself: no sweep would check, collect or report
        raise UsageError("hydra.mode=RUN: blockbench runs every point through its sweeper, a single point as a sweep "
                         "of one (hydra.mode=MULTIRUN, the default); leave hydra.mode unset")

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
    argv = under_torchrun(sys.argv[1:] if argv is None else argv)
    from ablations.measure.ceilings import forget_run

    forget_run()  # this run measures its own ceilings, once, at its first timed point
    sys.argv = [sys.argv[0], *argv]
    # Hydra prints any exception of its own work with a traceback unless this is "1"; then it raises it, and it becomes
    # one line below. Set whatever the caller's environment holds: with HYDRA_FULL_ERROR=0 exported, Hydra printed
    # its traceback.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    # A log file on a full disk would print logging's own traceback for every record.
    logging.raiseExceptions = False
    try:
        hydra_main()
    except BrokenPipeError:
        raise  # ``--help | head``: the reader left (``command`` says nothing more)
    except (HydraException, OmegaConfBaseException, ConfigError) as exc:  # the primary config: the user's input
        raise UsageError(one_line(exc)) from None  # before OSError: a missing config option is both
    except OSError as exc:
        raise Fault(os_error_line(exc)) from None
