"""``python -m ablations.quality.reuse_seeds ROWS_DIR SWEEP_DIR``: every seed a finished run's rows hold put back into
a sweep folder's seed ledger (``ablations.quality.ledger``), so a sweep run there (more arms, another rate, more
confirmation seeds, or the same sweep rebuilt after its run folder is gone) trains only what those rows lack.

A seed is read back from whichever rows it left:

- an evaluation seed from its own rows (``final``, ``curve``, ``extrapolation``, ``quality``), whole;
- a scan seed, a compute-curve budget and a learning-rate check's seed from their renamed final loss and wall time
  (``lr_scan_loss``, ``budget_loss``, ``check_loss``, ``lr_check_loss``), the only rows of theirs a run keeps and
  the only ones a reader of them takes.

The arm id is the training's whole identity, so a restored seed is the seed the rerun would train; its ``git_rev``
and times stay its own.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from ablations.config.errors import UsageError, command, prog
from ablations.quality.ledger import Ledger, without_empty_cells
from ablations.quality.run import BUDGET_METRICS, CHECK_METRICS, LR_CHECK_METRICS
from ablations.quality.tuning import SCAN_METRICS
from ablations.results.table import SEED_ROW_KEY, TableError, load

# The modes of a seed's own rows, as a run writes them into its point files.
OWN_MODES = ("final", "curve", "extrapolation", "quality")
# Each renamed metric back to the seed's own, and the mode that row had there.
RENAMED = {renamed: own for metrics in (SCAN_METRICS, BUDGET_METRICS, CHECK_METRICS, LR_CHECK_METRICS)
           for own, renamed in metrics.items()}
SEED_MODES = {"val_loss": "final", "train_wall_time": "quality"}
# The labels a reader adds to a seed's renamed rows (which budget, which point, why that rate), not the seed's own.
READER_LABELS = ("budget", "lr_source", "point")


def seed_records(table: pd.DataFrame) -> dict[tuple[str, int], list[dict]]:
    """Each (arm, seed) the rows hold, as the ledger record a run would have written: its own rows where the table
    has them, else its renamed final loss and wall time. A seed with no final loss (one that failed) is left out; a
    diverged one is an outcome, kept as its run recorded it."""
    if not {"arm", "seed", "metric", "mode"} <= set(table):
        return {}
    keyed = table[table["arm"].notna() & table["seed"].notna()]
    keys = [k for k in SEED_ROW_KEY if k in keyed]
    records: dict[tuple[str, int], list[dict]] = {}
    own = keyed[keyed["mode"].isin(OWN_MODES)].drop_duplicates(subset=keys)
    for (arm, seed), rows in own.groupby(["arm", "seed"], sort=True):
        records[(str(arm), int(seed))] = without_empty_cells(rows.to_dict("records"))
    renamed = keyed[keyed["metric"].isin(list(RENAMED))]
    for (arm, seed), rows in renamed.groupby(["arm", "seed"], sort=True):
        if (str(arm), int(seed)) in records:
            continue
        back = rows.drop(columns=[c for c in READER_LABELS if c in rows]).assign(
            metric=rows["metric"].map(RENAMED)).drop_duplicates(subset=["metric"])
        records[(str(arm), int(seed))] = without_empty_cells({**r, "mode": SEED_MODES[r["metric"]]}
                                                             for r in back.to_dict("records"))
    return {key: rows for key, rows in records.items() if any(
        r["metric"] == "val_loss" and r["mode"] == "final" and r.get("status", "ok") != "failed" for r in rows)}


def restore_seeds(table: pd.DataFrame, ledger: Ledger) -> int:
    """Put every seed ``table`` holds (``seed_records``) into ``ledger``; a seed already there is left alone. The
    number put is returned."""
    restored = 0
    for (arm, seed), rows in seed_records(table).items():
        if ledger.get(arm, seed) is None:
            ledger.put(arm, seed, rows)
            restored += 1
    return restored


@command("reuse-seeds")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("reuse-seeds"),
                                     description="Put a finished run's seeds into a sweep folder's seed ledger.")
    parser.add_argument("rows", type=Path, metavar="ROWS_DIR", help="a folder whose results.csv holds quality seeds")
    parser.add_argument("sweep", type=Path, metavar="SWEEP_DIR", help="the sweep folder (hydra.sweep.dir) to fill")
    args = parser.parse_args(argv)
    if args.sweep.exists() and not args.sweep.is_dir():
        raise UsageError(f"{args.sweep}: SWEEP_DIR is a file; give a sweep folder (hydra.sweep.dir), new or existing")
    try:
        table = load(args.rows)
    except TableError as exc:
        raise UsageError(str(exc)) from None
    records = seed_records(table)
    if not records:
        raise UsageError(f"{args.rows}: no quality seed (rows with an arm, a seed and a final loss) to put back")
    restored = restore_seeds(table, Ledger(args.sweep))
    print(f"{restored} seed(s) put into {args.sweep} ({len(records) - restored} already there)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
