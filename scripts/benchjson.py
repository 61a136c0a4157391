"""Shared pieces of the benchmark scripts: how the suite is run, and reading pytest-benchmark's JSON.

Imported by the scripts next to it (``python scripts/<name>.py`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE = "tests/benchmarks"
# The regression workflow's time budget per benchmark: at least 5 rounds, up to 0.5 s. The noise that set
# the thresholds was measured with exactly these settings (scripts/bench_noise.py); change both together.
BUDGET = ["--benchmark-min-rounds=5", "--benchmark-max-time=0.5"]
# As ``python -m ablations`` does: without them glibc page faults moved memory-bound timings by up to 4x.
MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}


def suite_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in MALLOC.items():
        env.setdefault(key, value)
    env.update(extra or {})
    return env


def pytest_command(targets: list[str], *args: str) -> list[str]:
    """The suite (or some of its node ids) under pytest-benchmark, only benchmarks, with ``args``."""
    # -p no:cacheprovider: a worktree or a CI checkout should not grow a .pytest_cache from a timing run.
    return [sys.executable, "-m", "pytest", *targets, "--benchmark-only", "-q", "-p", "no:cacheprovider", *args]


def run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, echo: bool = True) -> int:
    """Run ``cmd``, writing its output to ``log`` (and to our stdout with ``echo``); return its exit status."""
    print(f"$ (cd {cwd} && {' '.join(cmd)})", flush=True)
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            if echo:
                sys.stdout.write(line)
        return proc.wait()


def load_stats(path: Path) -> dict[str, dict[str, float]]:
    """``fullname`` -> pytest-benchmark's stats (min, median, mean, iqr, ... in seconds) from a JSON report."""
    data = json.loads(path.read_text())
    return {b["fullname"]: b["stats"] for b in data["benchmarks"]}


def slowdowns(base: dict[str, dict[str, float]], head: dict[str, dict[str, float]],
              stat: str) -> dict[str, float]:
    """head/base - 1 of ``stat`` per benchmark both ran: pytest-benchmark's percentage check, as a fraction."""
    return {name: head[name][stat] / base[name][stat] - 1 for name in sorted(base.keys() & head.keys())
            if base[name][stat] > 0}


def split_args(parser: argparse.ArgumentParser) -> tuple[argparse.Namespace, list[str]]:
    """Our options, and everything after ``--`` for pytest (argparse alone mixes the two up)."""
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    return parser.parse_args(argv[:cut]), argv[cut + 1:]
