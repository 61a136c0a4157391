"""``python -m ablations.predict.calibrate``: measure this machine and write its ``conf/hardware`` entry.

    blockbench calibrate --threads 2            # -> conf/hardware/this_machine.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import yaml

from ablations.errors import command, prog
from ablations.measure.calibration import calibrate
from ablations.roofline import HARDWARE_DIR


@command("calibrate")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("calibrate"), description=__doc__.split("\n")[0].split(": ", 1)[1])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per figure; the best one counts")
    parser.add_argument("--out", type=Path, default=HARDWARE_DIR / "this_machine.yaml")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    entry = calibrate(rounds=args.rounds)
    header = ("# This machine, measured by python -m ablations.predict.calibrate (do not edit: rerun it).\n"
              f"# {entry['source']}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(header + yaml.safe_dump(entry, sort_keys=False))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
