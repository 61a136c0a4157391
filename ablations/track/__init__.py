"""Tracking, an optional extra (``pip install -e ".[track]"``): ``+logger=mlflow`` or ``+logger=tensorboard`` logs a
finished sweep from its results table (``plan``), offline; ``results.csv`` stays the source of truth.

Logging reads the folder once the sweep has finished (``ablations.callbacks.finish``), not from the points as they
run: under a parallel launcher the points' processes would contend for one SQLite store, and a table-first log is
the same whatever launched the points (a resumed sweep's skipped points included).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from omegaconf import DictConfig

from ablations.config.trackers import TRACKERS
from ablations.results.table import TABLE
from components.config import ConfigError


def check_logger(cfg: DictConfig) -> None:
    """One line before any work when ``+logger=NAME`` asks for a package that is not installed."""
    logger = cfg.get("logger")
    if logger is None:
        return
    package = TRACKERS[str(logger.name)].package
    if importlib.util.find_spec(package) is None:
        raise ConfigError(f"logger={logger.name} needs the {package} package, which is not installed here: "
                          'pip install -e ".[track]"')


def artifacts(folder: Path) -> list[Path]:
    """The sweep's files a tracker keeps: the table, the report and its figures, those that exist."""
    from ablations.report.markdown import FIGURES, REPORT  # the report's modules only when a sweep is logged

    found = [folder / TABLE, folder / REPORT, *sorted((folder / FIGURES).glob("*.png"))]
    return [p for p in found if p.is_file()]


def log_sweep(folder: Path, cfg: DictConfig) -> str:
    """Log the finished sweep in ``folder`` to the tracker ``cfg.logger`` names; returns where it went."""
    from ablations.results.table import load
    from ablations.track.plan import sweep_plan

    plan = sweep_plan(folder, load(folder), cfg, artifacts(folder))
    writer = importlib.import_module(TRACKERS[str(cfg.logger.name)].module)  # the tracker's package only now
    return writer.log_config(plan, folder, cfg.logger, str(cfg.sweep_name))
