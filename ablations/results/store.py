"""The results store: one CSV per sweep point, written atomically, collected into one long-form table.

A row is one measurement. Files are written through ``durable.write_atomic`` (temporary name, fsync, rename,
fsync of the folder), so a killed sweep, a full disk or a power cut leaves either a whole point file or none;
a rerun into the same folder skips points whose file is complete and succeeded, and redoes the rest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ablations.config.columns import row_columns
from ablations.results.durable import write_atomic
from ablations.results.table import POINTS_DIR, TABLE
from ablations.results.table import collect as collect_points

if TYPE_CHECKING:  # pandas is imported where a table is read or written, not at every command's start
    import pandas as pd

# The columns every row has, in order. Identity, then the measurement, then provenance.
COLUMNS = [
    "sweep", "variant", "point", *row_columns(), "tie_embeddings",
    "d_model", "n_layers", "n_heads", "ffn_hidden", "params", "params_baseline", "baseline", "baseline_kv_heads",
    "metric", "mode", "batch", "seq_len", "step", "position", "value", "unit", "statistic", "lo", "hi",
    "min", "max", "n", "seed", "profile", "corpus", "vocab_size", "device", "device_name", "dtype", "threads",
    "compile", "launcher", "torch", "git_rev", "malloc", "host", "plugins", "time", "status", "error", "note",
    # The quality runs: which arm (model, training, corpus) a row is a seed of, the rate it trained at and where that
    # rate came from (ablations.quality.learning_rate), and on a point's final loss how its seeds ended
    # (ablations.quality.seeds).
    "arm", "lr", "lr_source", "stopped", "looks", "target_mde",
    # The rate's schedule over the steps (ablations.quality.optimizer.SCHEDULES): cosine, or warmup-stable-decay.
    "schedule",
    # The compute multiplier (ablations.quality.multiplier): a baseline run's budget, as a multiple of the steps,
    # each arm's training FLOPs per step (the work model's), and the point's steps (its horizon: a budget run's
    # multiple is of these).
    "budget", "train_flops_step", "train_steps",
    # The quality runs' training step (ablations.quality.precision): the attention core's dtype under bf16 and why
    # the step runs as it does.
    "attention_core", "step_choice",
    # A component's own timing (ablations.measure.components_alone): the choice group whose module it timed alone.
    "component",
    # A decode timing row: whether the step ran as CUDA graph replays (ablations.measure.graphs).
    "graphs",
]


def config_hash(resolved: dict) -> str:
    """Identity of a point: every setting that can change its numbers."""
    return hashlib.sha1(json.dumps(resolved, sort_keys=True, default=str).encode()).hexdigest()[:12]


def point_path(folder: Path, variant: str, digest: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in variant)
    return folder / POINTS_DIR / f"{safe}-{digest}.csv"


def point_done(path: Path) -> bool:
    """True when a previous run wrote this point completely and without failure."""
    import pandas as pd

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
    import pandas as pd

    write_frame(pd.DataFrame(rows, columns=COLUMNS), path)


def collect(folder: Path) -> pd.DataFrame:
    """Every point file under ``folder`` in one table (empty with the columns if none)."""
    return collect_points(folder, COLUMNS)


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
