"""A real smoke sweep writes its report at the end, and ``python -m ablations.report`` rebuilds it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_smoke_sweep_builds_its_report(smoke_norm_sweep, tmp_path, capsys):
    folder = smoke_norm_sweep.folder
    assert smoke_norm_sweep.returncode == 0, smoke_norm_sweep.stderr
    text = (folder / "REPORT.md").read_text()  # written by the end-of-sweep callback
    for heading in ("## Setup", "## Claims", "## Sweep `norm`", "## Full-size models"):
        assert heading in text
    # A smoke report says what it is in its first line, and withholds its readings.
    assert text.splitlines()[0].endswith("(smoke profile: it checks the plumbing and gives no verdicts)")
    claims_section = text.split("## Claims", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in claims_section.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert rows and all(ln.rstrip(" |").endswith("withheld (smoke profile)") for ln in rows)
    assert text.index("## What each choice buys") < text.index("## Setup")  # the answer first
    assert text.index("## Full-size models") > text.index("## How to read this")  # not measured: last
    assert "| rmsnorm |" in text and "RMSNorm performs as well as LayerNorm at lower cost" in text
    figures = re.findall(r"\]\((figures/[^)]+)\)", text)
    assert any(f.endswith("norm-ratios.png") for f in figures)
    for name in figures:
        assert (folder / name).stat().st_size > 0, name

    # Rebuilt into a folder of its own: the shared sweep's folder stays as the sweep left it for the other tests.
    # Without figures: the sweep above drew them, and tests/report/test_report.py draws them through the command.
    # In-process: the command in a process of its own is the test below.
    from ablations.report.__main__ import main

    assert main([str(folder), "--out", str(tmp_path), "--no-figures"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str((tmp_path / "REPORT.md").resolve())
    assert "## Sweep `norm`" in (tmp_path / "REPORT.md").read_text() and (tmp_path / "results.csv").exists()
    assert not (tmp_path / "figures").exists() and "Not drawn" in (tmp_path / "REPORT.md").read_text()


@pytest.mark.slow
def test_cli_error_in_a_subprocess(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "ablations.report", str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"blockbench report: error: {tmp_path / 'missing'} is not a folder"]
