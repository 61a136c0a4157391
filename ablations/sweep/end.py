"""The sweep's end, from the rows alone: the collected table, REPORT.md, the tracker, and a summary whose last line is
the folder's path."""

from __future__ import annotations

import sys
from pathlib import Path

from ablations.config.errors import Fault, os_error_line
from ablations.config.plan import SweepEnd


def finish(end: SweepEnd, statuses: list[str]) -> None:
    """Write the collected table, build REPORT.md where no point failed, log to the tracker, print the summary, and
    make the last line the folder's path.

    A table or report that cannot be written (a full disk), or a report that fails, is a ``Fault``: the run stops
    with one line. The point files and the table stay, and a rerun into the folder writes what is
    missing."""
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
        # A launcher that returned no outcomes: read each point's from its file.
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
