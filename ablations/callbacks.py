"""Hydra callback: progress with an ETA across points, then the collected table and a summary."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ablations.config.errors import Fault, os_error_line
from ablations.config.plan import SweepEnd, logger_of, settings_of

log = logging.getLogger("ablations")


def sweep_end(config: DictConfig, folder: Path) -> SweepEnd:
    """What the sweep's end needs of the composed config (Hydra hands the callbacks the config, not a plan)."""
    logger = logger_of(config)
    return SweepEnd(folder, str(config.get("sweep_name", "adhoc")), bool(config.get("figures", True)), logger,
                    settings_of(config) if logger is not None else {})


def finish(end: SweepEnd, statuses: list[str]) -> None:
    """Write the collected table, build REPORT.md where no point failed, log to the tracker, print the summary, and
    make the last line the folder's path.

    A table or report that cannot be written (a full disk), or a report that fails, is a ``Fault``: Hydra
    turns a callback's exception into a warning and exit status 0. The point files and the table stay, and a
    rerun into the folder writes what is missing."""
    from ablations.quality.distributed import is_writer

    if not is_writer():  # under torchrun rank 0 writes the table and says how the sweep went
        return
    try:
        _finish(end, statuses)
    except OSError as exc:
        raise Fault(os_error_line(exc)) from None


def _finish(end: SweepEnd, statuses: list[str]) -> None:
    from ablations.results.store import write_table

    folder = end.folder
    table, written = write_table(folder)
    if not statuses and len(table):
        # The jobs ran in other processes (joblib, submitit), so their callbacks fired there: read each
        # point's outcome from its file instead.
        statuses = ["failed" if (s != "ok").any() else "ok" for _, s in table.groupby("point")["status"]]
    failed = statuses.count("failed")
    summary = (
        f"{len(statuses)} point(s): {statuses.count('ok')} ok, {failed} failed, "
        f"{statuses.count('skipped')} skipped (already measured); {len(table)} rows in {written[0].name}"
    )
    if failed == 0:
        _build_report(folder, draw_figures=end.figures)
    if end.logger is not None:
        summary += f"; logged to {_track(end)}"
    print(summary, file=sys.stderr)
    print(folder.resolve())
    sys.stdout.flush()
    if failed:
        raise SystemExit(1)


def _build_report(folder: Path, draw_figures: bool = True) -> None:
    """The sweep's REPORT.md; a report that fails (a bug, a missing plotting library) is one line and exit 1,
    not Hydra's warning and exit 0, and it names the command that rebuilds it from the table just written."""
    try:
        from ablations.report.markdown import build_report

        build_report(folder, draw_figures=draw_figures)
    except OSError:
        raise
    except Exception as exc:
        reason = " ".join(str(exc).split())  # one line, whatever the exception's message spans
        raise Fault(f"the report could not be built ({type(exc).__name__}: {reason}); the measurements are in "
                    f"{folder / 'results.csv'}: rebuild with blockbench report {folder}") from None


def _track(end: SweepEnd) -> str:
    """Log the finished sweep to ``+logger``'s tracker (``ablations.track``); a tracker that fails is one line and
    exit 1, the results folder (the source of truth) already whole."""
    try:
        from ablations.track import log_sweep

        return log_sweep(end)
    except OSError:
        raise
    except Exception as exc:
        reason = " ".join(str(exc).split())
        raise Fault(f"logger={end.logger.name} failed ({type(exc).__name__}: {reason}); the results are whole in "
                    f"{end.folder / 'results.csv'}") from None


class SweepCallback(Callback):
    """``expected_points``: how many points the run has, for the ETA; ``blockbench run`` counts them when it checks
    every point (``hydra.callbacks.collect.expected_points``); None where unknown."""

    def __init__(self, expected_points: int | None = None) -> None:
        self.expected_points = expected_points
        self.statuses: list[str] = []
        self.started = time.monotonic()
        self.bar: Any = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from tqdm.auto import tqdm

        self.started = time.monotonic()
        self.bar = tqdm(total=self.expected_points, desc=f"sweep {config.sweep_name}", unit="point",
                        disable=not sys.stderr.isatty())

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """Count the point and say how it went; a single run (no ``-m``, no sweep) then ends here too: its table,
        summary and folder line come after its point's line, as a multirun's do in ``on_multirun_end``. A point
        skipped (already measured) writes nothing; one whose job raised leaves the exception to Hydra."""
        if job_return.status == JobStatus.COMPLETED:
            status = job_return.return_value
        else:  # an exception escaped the point (it should not): count it as a failure
            status = "failed"
        self.statuses.append(status)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(f"{config.get('sweep_name')}: last {status}")
        if not sys.stderr.isatty():
            done, total = len(self.statuses), self.expected_points
            elapsed = time.monotonic() - self.started
            eta = f", ETA {elapsed / done * (total - done):.0f} s" if total else ""
            log.info("point %d/%s %s (%.0f s elapsed%s)", done, total or "?", status, elapsed, eta)
        single = OmegaConf.select(config, "hydra.mode") == RunMode.RUN
        if single and job_return.status == JobStatus.COMPLETED and status != "skipped":
            from ablations.runner import output_folder

            finish(sweep_end(config, output_folder(config)), [status])

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.close()
        folder = Path(config.out) if config.get("out") else Path(config.hydra.sweep.dir)
        finish(sweep_end(config, folder), self.statuses)
