"""The log's lines come in order: each point's ``point i/n STATUS`` line, then the sweep's summary, then the folder's
path as the last line, for a single run (no ``-m``) as for a multirun (``ablations.callbacks.SweepCallback``)."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra.core.utils import JobReturn, JobStatus
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ablations import callbacks
from tests.ablations.jobs import QUICK_POINT

# The fastest point that still runs (tests/ablations/jobs.py): the tiny block, one shape, one decode context.
QUICK = ["profile=smoke", "model=tiny", "threads=1", "figures=false", *QUICK_POINT]


@pytest.fixture
def events(monkeypatch) -> Iterator[list[str]]:
    """What the callback said and did, in order: its log lines, and ``finish(FOLDER)`` where it ended the sweep."""
    said: list[str] = []

    class Record(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    monkeypatch.setattr(callbacks, "finish", lambda end, statuses: said.append(f"finish({end.folder})"))
    handler, logger = Record(logging.INFO), logging.getLogger("ablations")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield said
    logger.removeHandler(handler)
    logger.setLevel(level)


def config(mode: RunMode, folder: Path) -> DictConfig:
    return OmegaConf.create({"hydra": {"mode": mode, "sweep": {"dir": str(folder)}}, "out": str(folder),
                             "sweep_name": "norm"})


def done(status: str) -> JobReturn:
    return JobReturn(status=JobStatus.COMPLETED, _return_value=status)


@pytest.mark.parametrize("status", ["ok", "failed"])
def test_a_single_run_says_its_point_before_it_ends(status, tmp_path, events, monkeypatch):
    callbacks.SweepCallback(expected_points=1).on_job_end(config(RunMode.RUN, tmp_path), done(status))
    assert [e.split(" (")[0] for e in events] == [f"point 1/1 {status}", f"finish({tmp_path})"]


def test_a_single_run_skipped_writes_nothing(tmp_path, events, monkeypatch):
    callbacks.SweepCallback(expected_points=1).on_job_end(config(RunMode.RUN, tmp_path), done("skipped"))
    assert [e.split(" (")[0] for e in events] == ["point 1/1 skipped"]


def test_a_single_run_whose_job_raised_leaves_the_exception_to_hydra(tmp_path, events, monkeypatch):
    raised = JobReturn(status=JobStatus.FAILED, _return_value=RuntimeError("a bug"))
    callbacks.SweepCallback(expected_points=1).on_job_end(config(RunMode.RUN, tmp_path), raised)
    assert [e.split(" (")[0] for e in events] == ["point 1/1 failed"]


def test_a_multirun_says_every_point_before_it_ends(tmp_path, events, monkeypatch):
    cfg, callback = config(RunMode.MULTIRUN, tmp_path), callbacks.SweepCallback(expected_points=2)
    callback.on_multirun_start(cfg)
    callback.on_job_end(cfg, done("ok"))
    callback.on_job_end(cfg, done("failed"))
    callback.on_multirun_end(cfg)
    assert [e.split(" (")[0] for e in events] == ["point 1/2 ok", "point 2/2 failed", f"finish({tmp_path})"]


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
