"""``python -m ablations.report.tuned_rates DIR [--regime NAME]``: a learning-rate scan's chosen rates as the
``train.tuned_lr`` entry to commit in ``conf/train/default.yaml`` (``ablations.report.lr_sections.tuned_rates_yaml``),
so the configuration holds exactly what the scan chose and names the scan beside it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ablations.config.errors import UsageError, command, prog
from ablations.report.lr_sections import tuned_rates_yaml
from ablations.report.tables import ReportError, load_table


@command("tuned-rates")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("tuned-rates"),
                                     description="Print a scan's chosen rates as a train.tuned_lr entry (YAML).")
    parser.add_argument("folder", type=Path, metavar="DIR", help="a folder whose results.csv holds lr_tuned rows")
    parser.add_argument("--regime", help="the train option the rates are for (default: the rows' own)")
    parser.add_argument("--scan", help="how the entry names the scan (default: DIR and its sweep)")
    args = parser.parse_args(argv)
    try:
        table = load_table(args.folder)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    tuned = table[table["metric"] == "lr_tuned"]
    if tuned.empty:
        raise UsageError(f"{args.folder}: no lr_tuned rows (run a sweep with train.lr_scan=true, e.g. +sweep=lr_scan)")
    regimes = sorted(set(tuned["note"].dropna().astype(str).str.extract(r"train=(\w+)", expand=False).dropna()))
    regime = args.regime or (regimes[0] if len(regimes) == 1 else "default")
    sweeps = ", ".join(sorted(set(tuned["sweep"].dropna().astype(str))))
    print(tuned_rates_yaml(tuned, regime, args.scan or f"{args.folder} (+sweep={sweeps})"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
