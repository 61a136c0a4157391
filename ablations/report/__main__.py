"""``blockbench report DIR [DIR ...] [--out OUT]`` (``python -m ablations.report``): REPORT.md and figures.

    blockbench report DIR                      # DIR/REPORT.md and DIR/figures/
    blockbench report DIR1 DIR2 ... --out OUT  # several sweeps in one report (OUT/results.csv too)
    blockbench report DIR --no-figures         # REPORT.md only, without matplotlib's seconds
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ablations.config.errors import Fault, UsageError, command, os_error_line, prog
from ablations.report.markdown import build_report
from ablations.report.tables import ReportError, combine, load_table
from ablations.results.durable import write_atomic
from ablations.results.report_inputs import missing, read_report_inputs, write_report_inputs
from ablations.results.table import TABLE


@command("report")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("report"),
        description="Build REPORT.md and figures (PNG, SVG) from one or more sweep folders' results.csv.",
    )
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="sweep folder(s) holding results.csv")
    parser.add_argument("--out", type=Path, help="write the report here (default: the first DIR); a new folder "
                        "also gets the combined results.csv, so it can be rebuilt on its own")
    parser.add_argument("--no-figures", dest="figures", action="store_false",
                        help="REPORT.md without its figures (and none left from an earlier build), seconds sooner")
    args = parser.parse_args(argv)
    try:
        tables = [load_table(f) for f in args.folders]
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    inputs = read_report_inputs(args.folders)
    if inputs is None:
        raise UsageError(missing(args.folders))
    out = args.out or args.folders[0]
    table = combine(tables)
    try:
        if args.out and all(args.out.resolve() != f.resolve() for f in args.folders):
            write_atomic(out / TABLE, lambda f: table.to_csv(f, index=False))
            write_report_inputs(out, inputs)  # the new folder rebuilds on its own
        report = build_report(out, table, sources=args.folders, draw_figures=args.figures, inputs=inputs)
    except OSError as exc:  # a full disk, a read-only folder: the earlier report, if any, stays whole
        raise Fault(os_error_line(exc)) from None
    print(report.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
