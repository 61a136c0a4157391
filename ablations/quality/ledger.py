"""Seeds already trained in a sweep, by arm: what lets a point pair its seeds with its baseline's.

An **arm** is a quality model with its training settings and corpus (``arm_id``). In a sequential sweep the
baseline point trains the first seeds of its arm; a point that needs more seeds to answer its comparison trains
the next seeds of both its own arm and the baseline's, and a later point that needs the same baseline seed finds it
here instead of training it again. Each seed's rows are one file, ``<sweep>/seeds/<arm>/<seed>.csv``, written
atomically, so a killed sweep keeps every seed it finished and a rerun trains only what is missing.

A point's file holds the rows of every seed its comparison used, its baseline's included; the same seed of the
same arm then appears in several point files, identical, and ``ablations.results.table.collect`` keeps one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ablations.config.schema import RATE_SETTINGS, TrainConfig
from ablations.quality import distributed
from ablations.results.durable import make_folder, write_atomic
from ablations.results.identity import NEUTRAL_ARM_SETTINGS, without_moot_settings
from components import ArchConfig

SEEDS_DIR = "seeds"
# Train settings that say how many seeds, not how one seed trains: not part of an arm.
# Nor do the settings that choose the rate: an arm's ``lr`` is the rate it trains at, wherever it came from; nor the
# lengths a wsd run also trains as branches (each branch is its own length's seed).
NOT_ARM = ("name", "enabled", "seeds", "min_seeds", "max_seeds", "target_mde", "family", "lr_check", "budgets",
           "budget_seeds", "check_budgets", "branch_steps", *RATE_SETTINGS)


def arm_id(arch: ArchConfig, tc: TrainConfig, corpus_sha256: str) -> str:
    """Everything that fixes one seed's numbers: the quality model, the training settings and the corpus."""
    train = {k: v for k, v in without_moot_settings(dataclasses.asdict(tc)).items() if k not in NOT_ARM
             and not (k in NEUTRAL_ARM_SETTINGS and NEUTRAL_ARM_SETTINGS[k] == v)}
    key = json.dumps({"arch": arch.to_dict(), "train": train, "corpus": corpus_sha256}, sort_keys=True,
                     default=str)
    return hashlib.sha1(key.encode()).hexdigest()[:12]


class Ledger:
    """Trained seeds by (arm, seed): on disk under ``folder``, or in memory when there is none (a test)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder / SEEDS_DIR if folder is not None else None
        self._memory: dict[tuple[str, int], list[dict]] = {}

    def _path(self, arm: str, seed: int) -> Path:
        assert self.folder is not None
        return self.folder / arm / f"{seed}.csv"

    def get(self, arm: str, seed: int) -> list[dict] | None:
        if self.folder is None:
            return self._memory.get((arm, seed))
        # Under torchrun rank 0 reads and every rank takes its answer: all train a seed, or none does.
        return distributed.from_writer(self._read(arm, seed) if distributed.is_writer() else None)

    def _read(self, arm: str, seed: int) -> list[dict] | None:
        path = self._path(arm, seed)
        if not path.is_file():
            return None
        try:
            frame = pd.read_csv(path)
        except (pd.errors.EmptyDataError, pd.errors.ParserError):
            return None  # not a seed this version wrote whole: train it again
        return without_empty_cells(frame.to_dict("records"))

    def put(self, arm: str, seed: int, rows: list[dict]) -> None:
        if self.folder is None:
            self._memory[(arm, seed)] = [dict(r) for r in rows]
            return
        if not distributed.is_writer():
            return
        path = self._path(arm, seed)
        make_folder(path.parent)
        write_atomic(path, lambda f: pd.DataFrame(rows).to_csv(f, index=False))


def without_empty_cells(rows: Iterable[dict]) -> list[dict]:
    """Rows without the cells a CSV read back as NaN: a seed's rows as the ledger keeps them."""
    return [{k: v for k, v in r.items() if not (isinstance(v, float) and v != v)} for r in rows]


# Base keys a seed's ledger rows may lack (written before the column existed) that its arm id implies: the same arm
# id is the same training, so the reading point's value is the seed's.
PLAN_KEYS = ("train_steps", "schedule")
# Labels that say which point reads a seed and why its arm trains at its rate: always the reading point's, so a seed
# another sweep trained (a ledger carried over, ``reuse_seeds``) is recorded as this sweep's comparison.
READER_KEYS = ("sweep", "point", "lr_source")


def reused(rows: list[dict], base: dict) -> list[dict]:
    """A ledger seed's rows as the point reading them records them: that point's sweep, file and rate source, and the
    plan keys the arm id implies; the rest (the training, its time, its ``git_rev``) is the seed's own."""
    return [{**{k: base[k] for k in PLAN_KEYS if k in base}, **r, **{k: base[k] for k in READER_KEYS if k in base}}
            for r in rows]
