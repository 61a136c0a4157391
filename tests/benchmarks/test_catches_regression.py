"""Proof that the compare step catches a regression: pytest-benchmark's save/compare on the RMSNorm benchmarks,
failing with the test-only 2x slowdown (``BLOCKBENCH_BENCH_SLOWDOWN=rmsnorm``) and passing without it.

The whole workflow (a git worktree of the base revision, confirmation round) is shown by
``scripts/prove_regression.sh``; this test keeps to the pytest-benchmark flags, on one revision, in ~30 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SELECT = ["-k", "test_norm and rmsnorm and forward"]
FAIL_AT = "min:30%"  # the workflow's default (scripts/bench_regression.py)


def bench(tmp: Path, *args: str, slowdown: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, BLOCKBENCH_BENCH_SLOWDOWN=slowdown)
    env.pop("PYTEST_XDIST_WORKER", None)
    # cwd is the temporary folder so that the storage lies below it (pytest-benchmark 5.3 needs that to warn).
    cmd = [sys.executable, "-m", "pytest", str(REPO / "tests" / "benchmarks"), "--benchmark-only", "-q",
           "-p", "no:cacheprovider", f"--benchmark-storage=file://{tmp / 'storage'}",
           "--benchmark-min-rounds=5", "--benchmark-max-time=0.5", *SELECT, *args]
    return subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


class Storage:
    """Saved baselines in one folder; pytest-benchmark numbers them 0001, 0002, ..."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.saved = tmp, 0

    def compare(self, slowdown: str = "") -> tuple[bool, str]:
        """Save a fresh baseline, then compare a second run against it: (regressed, output)."""
        self.saved += 1
        saved = bench(self.tmp, f"--benchmark-save=b{self.saved}")
        assert saved.returncode == 0, saved.stdout + saved.stderr
        proc = bench(self.tmp, f"--benchmark-compare={self.saved:04d}", f"--benchmark-compare-fail={FAIL_AT}",
                     slowdown=slowdown)
        out = proc.stdout + proc.stderr
        return proc.returncode != 0 and "Performance has regressed" in out, out


def test_compare_fails_on_injected_slowdown_and_passes_without(tmp_path):
    storage = Storage(tmp_path)
    # Two processes a minute apart on a shared machine can differ past the threshold by chance, so each
    # verdict gets fresh attempts, as the workflow's confirmation rounds do; the injected 2x needs none.
    regressed, out = storage.compare(slowdown="rmsnorm")
    if not regressed:
        regressed, out = storage.compare(slowdown="rmsnorm")
    assert regressed, out
    assert "test_norm[rmsnorm-forward]" in out
    for _ in range(3):
        regressed, out = storage.compare()
        if not regressed:
            break
    assert not regressed, out
