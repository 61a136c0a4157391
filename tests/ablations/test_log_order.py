"""The log's lines come in order: each point's ``point i/n STATUS`` line, then the sweep's summary, then the folder's
path as the last line, for a single run (no ``-m``, a sweep of one) as for a multirun (``ablations.sweep.run``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.ablations.jobs import QUICK_POINT

# The fastest point that still runs (tests/ablations/jobs.py): the tiny block, one shape, one decode context.
QUICK = ["profile=smoke", "model=tiny", "threads=1", "figures=false", *QUICK_POINT]


@pytest.mark.slow
@pytest.mark.parametrize("args,n", [(["norm=rmsnorm"], 1), (["-m", "norm=layernorm,rmsnorm"], 2)],
                         ids=["single run", "multirun"])
def test_the_points_lines_come_before_the_summary_and_the_folder(args, n, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ablations", *args, *QUICK, f"hydra.run.dir={tmp_path}", f"hydra.sweep.dir={tmp_path}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.strip().splitlines()

    def where(text: str) -> int:
        found = [i for i, line in enumerate(lines) if text in line]
        assert len(found) == 1, (text, proc.stdout)
        return found[0]

    points = [where(f"point {i}/{n} ok (") for i in range(1, n + 1)]
    summary = where(f"{n} point(s): {n} ok, 0 failed")
    assert points == sorted(points) and points[-1] < summary < len(lines) - 1
    assert lines[-1] == str(tmp_path.resolve())
