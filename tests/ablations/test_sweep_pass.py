"""One pass through a sweep (``ablations.sweep``): Hydra reads the command line, blockbench's sweeper composes each
point once into its plan before any runs, runs the plans in process or hands the points to a launcher, and writes the
report from the rows. No private Hydra API, no values handed back to Hydra as overrides, no callback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl  # counted here, never used by blockbench

from ablations import cli
from ablations.results.report_inputs import read_report_inputs
from ablations.results.sweep_record import read_sweep_record
from ablations.sweep import run as sweep_run
from ablations.sweep.report_inputs import report_inputs
from tests.ablations.jobs import QUICK_POINT

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["profile=smoke", "model=tiny", "threads=1", "figures=false", *QUICK_POINT]


def test_every_point_is_composed_once_and_run_from_its_plan(tmp_path, monkeypatch):
    composed: list[list[str]] = []
    real = ConfigLoaderImpl.load_sweep_config

    def counted(self, master_config, sweep_overrides):
        composed.append(list(sweep_overrides))
        return real(self, master_config, sweep_overrides)

    ran = []
    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counted)
    monkeypatch.setattr(sweep_run, "run_in_process", lambda sweep, context: ran.append(sweep) or [])
    monkeypatch.setattr(sweep_run, "finish", lambda end, statuses: None)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert cli.main(["+sweep=norm", "pos=rope,none", *QUICK, "train.enabled=true", "measure=false",
                     f"hydra.sweep.dir={tmp_path}"]) == 0
    (sweep,) = ran
    assert len(sweep) == 4 and len(composed) == 4  # each point composed once, by the sweeper
    assert [job.config.hydra.job.num for job in sweep.jobs] == [0, 1, 2, 3]
    assert {job.plan.quality.train.family for job in sweep.jobs} == {sweep.family}
    assert read_sweep_record(tmp_path) == sweep.record  # written before the first point, for launched points
    assert read_report_inputs([tmp_path]) == report_inputs()  # and what its report prints that no row holds
    assert (tmp_path / "multirun.yaml").is_file()


def test_hydras_run_mode_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert cli.main([*QUICK, "hydra.mode=RUN", f"hydra.run.dir={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("blockbench run: error: hydra.mode=RUN: ") and "Traceback" not in "".join(err)
    assert not (tmp_path / "points").exists()  # refused before the point ran


def test_blockbench_uses_no_private_hydra_api():
    sources = [*(ROOT / "ablations").rglob("*.py"), *(ROOT / "hydra_plugins").rglob("*.py")]
    assert [str(p) for p in sources if "hydra._internal" in p.read_text()] == []


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_a_launched_sweep_runs_its_points_in_workers_and_reports_from_their_rows(launcher, tmp_path):
    argv = ["-m", "norm=layernorm,rmsnorm", f"hydra/launcher={launcher}", *QUICK, f"hydra.sweep.dir={tmp_path}"]
    proc = subprocess.run([sys.executable, "-m", "ablations", *argv], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "2 point(s): 2 ok, 0 failed" in proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["variant"]) == {"gpt2", "rmsnorm"} and set(table["launcher"]) == {launcher}
    assert (tmp_path / "REPORT.md").is_file() and proc.stdout.strip().splitlines()[-1] == str(tmp_path.resolve())
