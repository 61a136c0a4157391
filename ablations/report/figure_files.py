"""The files of a report's ``figures/`` folder, apart from the plotting: a report built without figures must not
import matplotlib, and must still leave no figure from an earlier build beside a REPORT.md that does not show it."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

SUFFIXES = (".png", ".svg")  # what ``ablations.report.figures.save`` writes for each figure


def remove_stale(folder: Path, keep: Collection[Path] = ()) -> None:
    """Delete every figure file in ``folder`` that is not in ``keep``; other files stay."""
    for path in folder.glob("*"):
        if path.suffix in SUFFIXES and path not in keep:
            path.unlink()
