"""Tracking, an optional extra (``pip install -e ".[track]"``): ``+logger=mlflow`` or ``+logger=tensorboard`` logs a
finished sweep from its results table (``runs``), offline; ``results.csv`` stays the source of truth.

Logging reads the folder once the sweep has finished (``ablations.sweep.end.finish``), not from the points as they
run: under a parallel launcher the points' processes would contend for one SQLite store, and a table-first log is
the same whatever launched the points (a resumed sweep's skipped points included).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from ablations.config.plan import SweepEnd
from ablations.config.schema import TRACKERS, LoggerConfig
from ablations.results.table import TABLE
from components.config import ConfigError


def check_logger(logger: LoggerConfig | None) -> None:
    """One line before any work when ``+logger=NAME`` asks for a package that is not installed."""
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


def log_sweep(end: SweepEnd) -> str:
    """Log the finished sweep in ``end.folder`` to the tracker ``end.logger`` names; returns where it went."""
    from ablations.results.table import load
    from ablations.track.runs import sweep_runs

    assert end.logger is not None, "log_sweep needs a logger"
    sweep_run = sweep_runs(end.folder, load(end.folder), end.sweep, end.settings, artifacts(end.folder))
    writer = importlib.import_module(TRACKERS[str(end.logger.name)].module)  # the tracker's package only now
    return writer.log_config(sweep_run, end.folder, end.logger, end.sweep)
