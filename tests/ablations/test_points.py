"""One point's outcomes, in-process (tests/ablations/jobs.py): a point that fails is recorded and the sweep goes on
to exit 1; a point the disk refuses stops the sweep with one line naming its file and leaves nothing of itself; a point
already written is not measured again.

The same, as whole sweeps in processes, are the extended tier's ``test_failing_point_is_recorded_and_the_sweep_goes_on``
(tests/ablations/test_sweeps.py) and ``test_disk_full_at_a_point_keeps_the_earlier_point_and_a_rerun_reuses_it``
(tests/ablations/test_errors.py); the default tier's subprocess faults (test_errors) take the same one-line route.
"""

from __future__ import annotations

import errno
import os
import re

import pandas as pd
import pytest

from ablations import runner
from ablations.cli import hydra_main
from ablations.config.errors import Fault
from ablations.config.plan import SweepEnd
from ablations.results.store import point_done
from ablations.sweep.end import finish
from tests.ablations.jobs import job_config


def test_a_point_that_fails_is_recorded_and_the_sweep_goes_on_to_exit_1(tmp_path, as_job, capsys):
    # init_std=1e30 overflows to inf and NaN: a realistic divergence, found at the first forward.
    statuses = []
    for num, init_std in enumerate(("1e30", "0.02")):
        cfg = job_config(tmp_path, f"model.init_std={init_std}", "profile.decode=false", num=num)
        as_job(cfg)
        statuses.append(hydra_main(cfg))
    assert statuses == ["failed", "ok"]
    with pytest.raises(SystemExit) as stop:
        finish(SweepEnd(tmp_path, figures=False), statuses)
    assert stop.value.code == 1
    out, err = capsys.readouterr()
    assert "2 point(s): 1 ok, 1 failed" in err
    assert out.strip().splitlines()[-1] == str(tmp_path.resolve())  # the folder is still the last word
    table = pd.read_csv(tmp_path / "results.csv")
    failed = table[table.status == "failed"]
    assert len(failed) == 1 and "NaN" in failed.iloc[0]["error"]
    assert (table.status == "ok").sum() > 10  # the other point measured everything


def test_a_point_the_disk_refuses_is_one_line_naming_its_file_and_a_rerun_reuses_the_earlier_one(
        tmp_path, as_job, monkeypatch):
    points = tmp_path / "points"
    gpt2 = job_config(tmp_path, "variant=gpt2", num=0)
    as_job(gpt2)
    assert hydra_main(gpt2) == "ok"
    [kept] = points.glob("gpt2-*.csv")
    before = kept.read_bytes()

    # The disk fills while the next point's file is written: its fsync fails after the data went in.
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if "rmsnorm-" in os.path.basename(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    rmsnorm = job_config(tmp_path, "variant=rmsnorm", num=1)
    as_job(rmsnorm)
    with pytest.raises(Fault) as stop:
        hydra_main(rmsnorm)
    assert re.fullmatch(rf"{re.escape(str(points))}/rmsnorm-[0-9a-f]{{12}}\.csv: cannot write "
                        r"\(No space left on device\)", stop.value.message), stop.value.message
    assert [p.name for p in points.iterdir()] == [kept.name]  # no temporary file, no part of the failed point
    monkeypatch.setattr(os, "fsync", real_fsync)

    # A rerun into the folder: the written point is reused as it is, the other measured.
    as_job(gpt2)
    assert runner.run_job(gpt2) == "skipped"
    assert kept.read_bytes() == before and point_done(kept)
    as_job(rmsnorm)
    assert runner.run_job(rmsnorm) == "ok"
    assert len(list(points.glob("*.csv"))) == 2
