"""The results store: one CSV per sweep point, written atomically, collected into one long-form table.

A row is one measurement. Files are written through ``durable.write_atomic`` (temporary name, fsync, rename,
fsync of the folder), so a killed sweep, a full disk or a power cut leaves either a whole point file or none;
a rerun into the same folder skips points whose file is complete and succeeded, and redoes the rest.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pandas as pd

from ablations.results.durable import write_atomic
from components.choice import row_columns

log = logging.getLogger("ablations")

POINTS_DIR = "points"
TABLE = "results.csv"

# The columns every row has, in order. Identity, then the measurement, then provenance.
COLUMNS = [
    "sweep", "variant", "point", *row_columns(), "tie_embeddings",
    "d_model", "n_layers", "n_heads", "ffn_hidden", "params", "params_baseline",
    "metric", "mode", "batch", "seq_len", "step", "position", "value", "unit", "statistic", "lo", "hi",
    "min", "max", "n", "seed", "profile", "corpus", "device", "device_name", "dtype", "threads", "compile", "launcher",
    "torch", "git_rev", "malloc", "host", "time", "status", "error", "note",
]


def config_hash(resolved: dict) -> str:
    """Identity of a point: every setting that can change its numbers."""
    return hashlib.sha1(json.dumps(resolved, sort_keys=True, default=str).encode()).hexdigest()[:12]


def point_path(folder: Path, variant: str, digest: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in variant)
    return folder / POINTS_DIR / f"{safe}-{digest}.csv"


def point_done(path: Path) -> bool:
    """True when a previous run wrote this point completely and without failure."""
    if not path.exists():
        return False
    try:
        status = pd.read_csv(path, usecols=["status"])["status"]
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return False
    return len(status) > 0 and bool((status == "ok").all())


def write_frame(frame: pd.DataFrame, path: Path, fmt: str = "csv") -> None:
    """Write ``frame`` durably (see ``durable``); ``WriteError`` names the file if the disk refuses."""
    if fmt == "parquet":
        write_atomic(path, lambda f: frame.to_parquet(f, index=False))
    else:
        write_atomic(path, lambda f: frame.to_csv(f, index=False))


def write_point(rows: list[dict], path: Path) -> None:
    write_frame(pd.DataFrame(rows, columns=COLUMNS), path)


def collect(folder: Path) -> pd.DataFrame:
    """Concatenate every point file under ``folder`` into one table (empty with the columns if none)."""
    frames = []
    for f in sorted((folder / POINTS_DIR).glob("*.csv")):
        try:
            frames.append(pd.read_csv(f))
        except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
            # Not a point of this run (those were redone: ``point_done`` is false for such a file), e.g. one
            # left by an older version that did not fsync; the table is still written from the others.
            log.warning("%s is empty or corrupt, left out of the table (delete it): %s", f, exc)
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)


class TableError(ValueError):
    """A results table that cannot be read; the message is one line naming the path."""


def load(path: Path) -> pd.DataFrame:
    """The one way a results table is read: a sweep folder's ``results.csv``, its ``points/*.csv`` when the table
    was never written (a killed sweep), or a CSV file. ``TableError`` names what is wrong in one line."""
    if path.is_dir():
        if not (path / TABLE).is_file():
            if not any((path / POINTS_DIR).glob("*.csv")):
                raise TableError(f"no results table in {path} (expected {path / TABLE}, or no results.csv and no "
                                 f"{POINTS_DIR}/*.csv; run a sweep with hydra.sweep.dir={path})")
            table = collect(path)
            if table.empty:
                raise TableError(f"{path / POINTS_DIR} has no rows")
            return table
        path = path / TABLE
    elif not path.exists():
        raise TableError(f"{path}: no such file or folder")
    try:
        table = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TableError(f"{path}: not a readable results table ({type(exc).__name__}: {exc})") from None
    if table.empty:
        raise TableError(f"{path} has no rows")
    return table


def write_table(folder: Path) -> tuple[pd.DataFrame, list[Path]]:
    """Collect the points and write ``results.csv`` (and ``results.parquet`` when pyarrow is there)."""
    table = collect(folder)
    written = [folder / TABLE]
    write_frame(table, written[0])
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        pass
    else:
        written.append(folder / "results.parquet")
        write_frame(table, written[-1], fmt="parquet")
    return table, written
