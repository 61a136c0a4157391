"""``python -m ablations.report DIR [DIR ...] [--out OUT]``: REPORT.md and figures from sweep folders.

    python -m ablations.report DIR                      # DIR/REPORT.md and DIR/figures/
    python -m ablations.report DIR1 DIR2 ... --out OUT  # several sweeps in one report (OUT/results.csv too)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ablations.errors import os_error_line
from ablations.report.markdown import build_report
from ablations.report.tables import ReportError, combine, load_table
from ablations.results.durable import write_atomic
from ablations.results.table import TABLE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablations.report",
        description="Build REPORT.md and figures (PNG, SVG) from one or more sweep folders' results.csv.",
    )
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="sweep folder(s) holding results.csv")
    parser.add_argument("--out", type=Path, help="write the report here (default: the first DIR); a new folder "
                        "also gets the combined results.csv, so it can be rebuilt on its own")
    args = parser.parse_args(argv)
    try:
        tables = [load_table(f) for f in args.folders]
    except ReportError as exc:
        print(f"ablations.report: error: {exc}", file=sys.stderr)
        return 2
    out = args.out or args.folders[0]
    table = combine(tables)
    try:
        if args.out and all(args.out.resolve() != f.resolve() for f in args.folders):
            write_atomic(out / TABLE, lambda f: table.to_csv(f, index=False))
        report = build_report(out, table, sources=args.folders)
    except OSError as exc:  # a full disk, a read-only folder: the earlier report, if any, stays whole
        print(f"ablations.report: error: {os_error_line(exc)}", file=sys.stderr)
        return 1
    print(report.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
