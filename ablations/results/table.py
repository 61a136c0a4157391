"""Reading results tables: the one way every tool loads a sweep folder's table or a CSV file.

Kept apart from ``store`` (which derives the row columns from the declared choices, and so imports ``torch``):
``blockbench compare`` reads tables without importing the model code.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where a table is read or written, not at every command's start
    import pandas as pd

log = logging.getLogger("ablations")

POINTS_DIR = "points"
TABLE = "results.csv"


def collect(folder: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """Concatenate every point file under ``folder`` into one table (empty, with ``columns``, if none)."""
    import pandas as pd

    frames = []
    for f in sorted((folder / POINTS_DIR).glob("*.csv")):
        try:
            frames.append(pd.read_csv(f))
        except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
            # Not a point of this run (``point_done`` is false for such a file, so its point is redone), e.g. one
            # written without fsync before a crash; the table is still written from the others.
            log.warning("%s is empty or corrupt, left out of the table (delete it): %s", f, exc)
    if not frames:
        return pd.DataFrame(columns=columns)
    return without_repeated_seeds(pd.concat(frames, ignore_index=True))


# A seed's rows are the same wherever they appear: its arm (model, training, corpus), the seed, and which row. A
# budget row is also a reading: one wsd run is 2.83x one horizon's steps and 1.41x the next's (3,111 steps of 1,100
# and of 2,200), a knot of both curves, so its budget is part of which row it is.
SEED_ROW_KEY = ["arm", "seed", "metric", "mode", "step", "seq_len", "position", "statistic", "lr", "budget"]


def without_repeated_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """Keep one copy of each quality seed's rows: a sequential sweep's points each carry their baseline's seeds
    (``ablations.quality.ledger``), so a seed of the baseline arm is in every point that used it. Rows without an
    arm (measurements, tables without the column) are all kept."""
    if "arm" not in table or table["arm"].isna().all():
        return table
    seeded = table["arm"].notna()
    keys = [k for k in SEED_ROW_KEY if k in table]
    repeated = table[seeded].duplicated(subset=keys, keep="first")
    return table.drop(index=repeated[repeated].index).reset_index(drop=True)


class TableError(ValueError):
    """A results table that cannot be read; the message is one line naming the path."""


def load(path: Path) -> pd.DataFrame:
    """The one way a results table is read: a sweep folder's ``results.csv``, its ``points/*.csv`` when the table
    was never written (a killed sweep), or a CSV file. ``TableError`` names what is wrong in one line."""
    import pandas as pd

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
        # Whole-file type inference: in chunks (pandas' default) a column such as ``stopped`` mixes types by row range.
        table = pd.read_csv(path, low_memory=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TableError(f"{path}: not a readable results table ({type(exc).__name__}: {exc})") from None
    if table.empty:
        raise TableError(f"{path} has no rows")
    return table


# The baseline of rows without a ``baseline`` column: Llama-2's block for leave_one_out, GPT-2's for any other sweep.
LEGACY_BASELINES = {"leave_one_out": "llama2"}
DEFAULT_BASELINE = "gpt2"


def baseline_variant(sweep: str, rows: pd.DataFrame) -> str:
    """The variant a point's rows compare against: the block named by their ``baseline`` column (``baseline=NAME``
    names the block, and the block's variant has the same name)."""
    named = rows["baseline"].dropna().unique() if "baseline" in rows else []
    return str(named[0]) if len(named) else LEGACY_BASELINES.get(sweep, DEFAULT_BASELINE)
