"""What a sweep knows only as a whole, written beside its points before the first runs (``sweep.json``): how many
points it has and how many final-loss comparisons it makes (its family, ``ablations.quality.seeds.family_of``).

A point launched in another process (joblib, submitit) composes its own config and reads its family here; a point
run in the sweep's process takes it from the sweep's plan."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ablations.results.durable import write_atomic

RECORD = "sweep.json"


@dataclass(frozen=True)
class SweepRecord:
    sweep: str
    points: int
    # The final-loss comparisons the sweep makes: every point's seeds are held to them.
    family: int


def write_sweep_record(folder: Path, record: SweepRecord) -> None:
    write_atomic(folder / RECORD, lambda f: f.write(json.dumps(asdict(record), indent=1).encode() + b"\n"))


def read_sweep_record(folder: Path) -> SweepRecord | None:
    """The record of the sweep writing into ``folder``; None where no sweep wrote one (a point run on its own)."""
    path = folder / RECORD
    return SweepRecord(**json.loads(path.read_text())) if path.is_file() else None
