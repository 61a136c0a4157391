"""Callgrind's instruction counts, end to end under valgrind: the same code counts the same, and RMSNorm's forward
run twice counts about twice. The worker starts with instrumentation off and switches it on itself
(``ablations.regress.callgrind``), so this is the proof that the switch happens before the counted calls."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ablations.regress import callgrind

pytestmark = [
    pytest.mark.slow,
    pytest.mark.extended,  # three valgrind processes, each importing torch: most of a minute
    pytest.mark.skipif(callgrind.available() is not None, reason=str(callgrind.available())),
]

ROOT = Path(__file__).resolve().parents[2]
CASE = "norm/rmsnorm/forward"
ORIGINAL = "        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)\n"
TWICE = "        F.rms_norm(x, self.weight.shape, self.weight, self.eps)  # extra work\n" + ORIGINAL


def counts(*roots: Path, tmp: Path) -> list[float]:
    """Instructions per call of CASE in each tree, the workers side by side as the check runs them."""
    procs = [(callgrind.start(root, [CASE], tmp / f"out{i}", number=1), tmp / f"out{i}") for i, root in
             enumerate(roots)]
    return [callgrind.finish(proc, out)[CASE] for proc, out in procs]


def test_same_code_counts_the_same_and_twice_the_work_counts_twice(tmp_path):
    same, edited = tmp_path / "same", tmp_path / "edited"
    for tree in (same, edited):
        shutil.copytree(ROOT / "components", tree / "components")
    norms = edited / "components" / "norms.py"
    assert ORIGINAL in norms.read_text(), "RMSNorm.forward changed: update this test's edit"
    norms.write_text(norms.read_text().replace(ORIGINAL, TWICE))
    base, again = counts(ROOT, same, tmp=tmp_path)
    (twice,) = counts(edited, tmp=tmp_path / "second")
    assert base > 1e5
    assert again / base == pytest.approx(1, abs=1e-3)
    assert 1.8 < twice / base < 2.2
