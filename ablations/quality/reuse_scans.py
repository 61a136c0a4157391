"""``python -m ablations.quality.reuse_scans ROWS_DIR SWEEP_DIR``: the scan seeds of a finished run put into another
sweep folder's seed ledger (``ablations.quality.tuning.restore_scans``), so a scan run there again (with confirmation
seeds, or more arms) trains only what the first run did not. Run it before the sweep, with the sweep's
``hydra.sweep.dir`` as ``SWEEP_DIR``; the reused seeds keep their own ``git_rev`` in every row.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ablations.config.errors import UsageError, command, prog
from ablations.quality.ledger import Ledger
from ablations.quality.tuning import restore_scans
from ablations.results.table import TableError, load


@command("reuse-scans")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("reuse-scans"),
                                     description="Put a finished run's scan seeds into a sweep folder's seed ledger.")
    parser.add_argument("rows", type=Path, metavar="ROWS_DIR",
                        help="a folder whose results.csv holds lr_scan_loss rows")
    parser.add_argument("sweep", type=Path, metavar="SWEEP_DIR", help="the sweep folder (hydra.sweep.dir) to fill")
    args = parser.parse_args(argv)
    try:
        table = load(args.rows)
    except TableError as exc:
        raise UsageError(str(exc)) from None
    if "arm" not in table or not (table["metric"] == "lr_scan_loss").any():
        raise UsageError(f"{args.rows}: no lr_scan_loss rows with an arm column (a run with train.lr_scan=true)")
    restored = restore_scans(table, Ledger(args.sweep))
    print(f"{restored} scan seed(s) put into {args.sweep}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
