"""Tracking, an optional extra (``pip install -e ".[track]"``): ``+logger=mlflow`` or ``+logger=tensorboard`` logs a
finished sweep from its results table (``plan``), offline; ``results.csv`` stays the source of truth.

Logging reads the folder once the sweep has finished (``ablations.callbacks.finish``), not from the points as they
run: under a parallel launcher the points' processes would contend for one SQLite store, and a table-first log is
the same whatever launched the points (a resumed sweep's skipped points included).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from omegaconf import DictConfig

from ablations.results.table import TABLE
from components.config import ConfigError

# What each tracker needs installed (the [track] extra).
NEEDS = {"mlflow": "mlflow", "tensorboard": "tensorboard"}


def check_logger(cfg: DictConfig) -> None:
    """One line before any work when ``+logger=NAME`` asks for a package that is not installed."""
    logger = cfg.get("logger")
    if logger is None:
        return
    package = NEEDS[str(logger.name)]
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

    logger = cfg.logger
    plan = sweep_plan(folder, load(folder), cfg, artifacts(folder))
    if str(logger.name) == "mlflow":
        from ablations.track import to_mlflow

        uri = str(logger.tracking_uri) or to_mlflow.default_uri(folder)
        to_mlflow.log(plan, folder, uri, str(logger.experiment or cfg.sweep_name))
        return uri
    from ablations.track import to_tensorboard

    return str(to_tensorboard.log(plan, folder, str(logger.log_dir)))
