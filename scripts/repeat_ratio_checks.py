"""Run the in-run ratio checks N times, each in a fresh process, and count how often each passed.

    python scripts/repeat_ratio_checks.py            # 20 runs
    python scripts/repeat_ratio_checks.py -n 5

A check that fails now and then is a bug (a band too narrow for the machine's noise, or a measurement too
short), so its pass count over many runs is part of the check. Also prints the range of each measured ratio,
which is what the bands in tests/benchmarks/test_ratio_checks.py were set from.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECKS = "tests/benchmarks/test_ratio_checks.py"
# As ``python -m ablations`` does: without them glibc page faults moved memory-bound timings by up to 4x.
MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}


def suite_env() -> dict[str, str]:
    """This environment with the tuned malloc settings, unless already set."""
    return {**MALLOC, **os.environ}


def split_args(parser: argparse.ArgumentParser) -> tuple[argparse.Namespace, list[str]]:
    """Our options, and everything after ``--`` for pytest (argparse alone mixes the two up)."""
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    return parser.parse_args(argv[:cut]), argv[cut + 1:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Arguments after -- go to pytest.")
    parser.add_argument("-n", "--runs", type=int, default=20, help="runs (default 20)")
    args, pytest_args = split_args(parser)
    out = Path(tempfile.mkdtemp(prefix="ratio-checks-"))
    passed: dict[str, int] = defaultdict(int)
    seen: dict[str, int] = defaultdict(int)
    ratios: dict[str, list[float]] = defaultdict(list)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()} at start")
    for i in range(args.runs):
        xml = out / f"run{i}.xml"
        started = time.monotonic()
        cmd = [sys.executable, "-m", "pytest", CHECKS, "--run-benchmarks", "-q", "-p", "no:cacheprovider",
               f"--junitxml={xml}", *pytest_args]
        proc = subprocess.run(cmd, cwd=REPO, env=suite_env(), capture_output=True, text=True)
        if not xml.exists():
            print(f"run {i}: pytest did not run (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            return 2
        notes = []
        for case in ET.parse(xml).getroot().iter("testcase"):
            name = case.get("name", "?")
            if case.find("skipped") is not None:
                notes.append(f"{name} SKIPPED")
                continue
            ok = case.find("failure") is None and case.find("error") is None
            seen[name] += 1
            passed[name] += ok
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            for key, value in props.items():
                if key.endswith("_median"):
                    ratios[key].append(float(value))
            measured = ", ".join(f"{k}={v}" for k, v in props.items() if k != "threads")
            notes.append(f"{name} {'PASS' if ok else 'FAIL'} ({measured})")
        print(f"run {i + 1}/{args.runs} ({time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.2f}): "
              + "; ".join(notes), flush=True)
    print("\npass counts:")
    for name in sorted(seen):
        print(f"    {passed[name]}/{seen[name]}  {name}")
    for key, values in sorted(ratios.items()):
        print(f"    {key}: min {min(values):.3f}, max {max(values):.3f} over {len(values)} runs")
    return 0 if all(passed[n] == seen[n] for n in seen) and seen else 1


if __name__ == "__main__":
    raise SystemExit(main())
