"""``python -m ablations.predict.calibrate``: measure this machine and write its ``hardware`` entry.

    blockbench calibrate --threads 2            # -> $BLOCKBENCH_HOME/hardware/this_machine.yaml

The entry goes into the user's config folder (``$BLOCKBENCH_HOME``, by default ``~/.config/blockbench``:
``ablations.config.paths``), never into the installed package; every command finds it there as
``hardware=this_machine``, in place of the package's own entry of that name (the reference machine's). ``--out`` writes
elsewhere (the repository's ``conf/hardware/this_machine.yaml``, to replace the reference). The folder is checked before
the minutes of measuring: one that cannot be written is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import yaml

from ablations.config.errors import Fault, UsageError, command, os_error_line, prog
from ablations.config.paths import HOME_ENV, home_dir, home_key, user_conf
from ablations.measure.calibration import MACHINE, calibrate
from ablations.results.durable import probe_folder, write_atomic


def default_out() -> Path:
    """Where the entry goes without ``--out``: the user's folder (a bad one is a ``UsageError`` naming it)."""
    user_conf()  # an existing one that is a file, or holds what blockbench does not read there
    return home_dir() / "hardware" / f"{MACHINE}.yaml"


@command("calibrate")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("calibrate"), description=__doc__.split("\n")[0].split(": ", 1)[1])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per figure; the best one counts")
    parser.add_argument("--out", type=Path,
                        help=f"the entry's file (default ${HOME_ENV}/hardware/{MACHINE}.yaml, the user's folder)")
    args = parser.parse_args(argv)
    out = args.out or default_out()
    problem = probe_folder(out.parent)
    if problem:
        raise UsageError(f"{f'--out {out}' if args.out else home_key()}: {problem}")
    if args.threads:
        torch.set_num_threads(args.threads)
    entry = calibrate(rounds=args.rounds)
    header = ("# This machine, measured by python -m ablations.predict.calibrate (do not edit: rerun it).\n"
              f"# {entry['source']}\n")
    text = header + yaml.safe_dump(entry, sort_keys=False)
    try:
        write_atomic(out, lambda f: f.write(text.encode()))
    except OSError as exc:  # the folder was writable minutes ago: a fault of the environment
        raise Fault(os_error_line(exc)) from None
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
