"""Proof that ``python -m ablations.regress`` catches a slowdown written into the code and passes the same code.

A shared clone of this repository's HEAD is the head tree; its RMSNorm is edited to run its forward twice
(about 2x the op: the kind of change a lost fusion makes). The check against HEAD must exit 1 naming the
case, with the regression confirmed by a fresh process, and 0 on the unedited clone: timed anyway
(``--time-identical``), and untimed by default, its source being the base's. Timing only (``--no-callgrind``) and
one case, so it takes seconds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASE = "norm/rmsnorm/forward"
ORIGINAL = "        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)\n"
TWICE = "        F.rms_norm(x, self.weight.shape, self.weight, self.eps)  # extra work\n" + ORIGINAL


def check(tree: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "ablations.regress", "HEAD", "-k", CASE, "--rounds", "8", "--no-callgrind",
           "--out", str(tree / "out"), *extra]
    return subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=600)


def test_regress_fails_on_a_slowdown_in_the_code_and_passes_without(tmp_path):
    tree = tmp_path / "tree"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(REPO), str(tree)], check=True)
    clean = check(tree, "--time-identical")
    assert clean.returncode == 0, clean.stderr
    assert f"[1/1] {CASE}: " in clean.stderr
    untimed = check(tree)
    assert untimed.returncode == 0, untimed.stderr
    assert "byte-identical source in the timed packages" in untimed.stderr and "[1/1]" not in untimed.stderr
    norms = tree / "components" / "norms.py"
    assert ORIGINAL in norms.read_text(), "RMSNorm.forward changed: update this test's edit"
    norms.write_text(norms.read_text().replace(ORIGINAL, TWICE))
    slow = check(tree)
    assert slow.returncode == 1, slow.stderr
    assert f"regression: {CASE}: time head/base" in slow.stderr
    assert "timed again in a fresh process: 1 confirmed, 0 not confirmed" in slow.stderr
