"""Bad input and faults of the environment: each is one line on stderr and an exit status, never a traceback,
and nothing already written is lost.

Every line is ``blockbench run: error: ...`` (``ablations.config.errors``). Input and environment checked before any
work (exit status 2) run in-process through ``ablations.cli.main``;
faults met during a run (exit status 1) run a real sweep in a subprocess with the fault injected
(``inject/sitecustomize.py``), and a rerun shows the points written before it were kept.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ablations import cli
from ablations.config.errors import Fault, error_line
from ablations.config.plan import SweepEnd
from ablations.config.schema import ProfileConfig, TrainConfig
from ablations.results import durable
from ablations.results.store import point_done
from ablations.results.table import POINTS_DIR
from ablations.sweep import run as sweep_run
from blockbench import choices

ROOT = Path(__file__).resolve().parents[2]
INJECT = Path(__file__).resolve().parent / "inject"
# The declared choice groups come right after model, in declaration order.
RUN_KEYS = ", ".join(["model", *(choice.group for choice in choices()), "profile", "train", "baseline", "data",
                      "logger", "measure",
                      "match_params",
                      "sweep_name", "device", "dtype", "compile", "threads", "seed", "out", "figures",
                      "allow_parallel_timing"])
TRAIN_KEYS = ", ".join(f.name for f in dataclasses.fields(TrainConfig))
PROFILE_KEYS = ", ".join(f.name for f in dataclasses.fields(ProfileConfig))
MODEL_KEYS = "d_model, n_layers, n_heads, max_seq_len, vocab_size, tie_embeddings, init_std, gqa_kv_heads"
# A quick sweep: the quality run only, a few steps, no figures; two points so that one can be written before a fault.
QUICK = ["+sweep=norm", "profile=smoke", "model=tiny", "threads=1", "measure=false", "train.steps=6",
         "train.eval_interval=3", "figures=false"]


@pytest.fixture
def cli_result(capsys, monkeypatch):
    """(exit status, stderr lines) of ``python -m ablations ARGV``, which must stop before any work."""

    def started(folder: Path) -> None:
        raise AssertionError("the input was not refused: the sweep was about to run it")

    monkeypatch.setattr(sweep_run, "make_folder", started)  # the sweep's first write, after every check
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main() hands its arguments to Hydra through sys.argv
    return lambda argv: _stopped(argv, capsys)


def _stopped(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    status = cli.main(argv)
    return status, capsys.readouterr().err.strip().splitlines()


# (arguments, the whole stderr line after "blockbench run: error: "; {tmp} is the test's folder)
BAD_INPUT = {
    "unknown top-level key": (
        ["+no_such_key=1"],
        f"Could not add '+no_such_key=1'; Key 'no_such_key' not in 'RunConfig' (allowed keys: {RUN_KEYS}); "
        "+sweep=NAME adds a sweep"),
    "typo of a nested key": (
        ["+train.step=100"],
        f"Could not add '+train.step=100'; Key 'step' not in 'TrainConfig' (allowed keys: {TRAIN_KEYS})"),
    "typo under model": (
        ["+model.dmodel=3"],
        f"Could not add '+model.dmodel=3'; Key 'dmodel' not in 'ModelSizes' (allowed keys: {MODEL_KEYS})"),
    "a new subtree": (
        ["+model.x.y=1"],
        f"Could not add '+model.x.y=1'; Key 'x' not in 'ModelSizes' (allowed keys: {MODEL_KEYS})"),
    "++ adds too": (
        ["++train.stepz=1"],
        f"Could not add '++train.stepz=1'; Key 'stepz' not in 'TrainConfig' (allowed keys: {TRAIN_KEYS})"),
    "unknown key swept with -m": (
        ["-m", "+train.stp=1,2"],
        f"Could not add '+train.stp=1'; Key 'stp' not in 'TrainConfig' (allowed keys: {TRAIN_KEYS})"),
    "a misspelt sweep group": (
        ["+sweeps=norm"],
        f"Could not add '+sweeps=norm'; Key 'sweeps' not in 'RunConfig' (allowed keys: {RUN_KEYS}); "
        "+sweep=NAME adds a sweep"),
    "unknown key in the sweep file's points": (
        ["+sweep=norm", "+profile.round=3"],
        f"Could not add '+profile.round=3'; Key 'round' not in 'ProfileConfig' (allowed keys: {PROFILE_KEYS})"),
    "sequential rounds without their bounds": (
        ["+sweep=norm", "profile.min_rounds=null"],
        "profile.target_halfwidth=0.03 needs profile.min_rounds and profile.max_rounds (e.g. 8 and 48)"),
    "sweep folder that cannot be created": (
        ["+sweep=norm", "hydra.sweep.dir=/proc/x"],
        "hydra.sweep.dir=/proc/x: cannot create the output folder (No such file or directory)"),
    "sweep folder that is a file": (
        ["+sweep=norm", "hydra.sweep.dir={tmp}/file"],
        "hydra.sweep.dir={tmp}/file: exists and is not a folder"),
    "run folder below a file": (
        ["hydra.run.dir={tmp}/file/run"],
        "hydra.run.dir={tmp}/file/run: cannot create the output folder (Not a directory)"),
    "-m writes in the sweep folder, not the run folder": (
        ["-m", "norm=layernorm,rmsnorm", "hydra.sweep.dir={tmp}/file"],
        "hydra.sweep.dir={tmp}/file: exists and is not a folder"),
    "out= that is a file": (
        ["out={tmp}/file"],
        "out={tmp}/file: exists and is not a folder"),
    "unknown option of the bias group": (
        ["bias=maybe"],
        "Could not find 'bias/maybe' (available options in 'bias': off, on)"),
    "bias name outside on/off": (
        ["bias.name=half"],
        "bias.name='half' is not a known variant; choose one of: on, off"),
    "corpus that is a device": (
        ["data.path=/dev/null"],
        "data.path=/dev/null is not a regular file; give a readable text file"),
    "nanoGPT's train.bin without data.format": (
        ["data.path={tmp}/train.bin"],
        "data.format=auto would read data.path={tmp}/train.bin as bytes, but it does not look like text (a NUL byte "
        "at offset 1, which text never holds); for nanoGPT's uint16 token ids set data.format=nanogpt with "
        "data.val_path=VAL.bin and data.vocab_size=N, or set data.format=bytes to train on its bytes anyway"),
}


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("not a folder\n")
    # nanoGPT's headerless uint16 ids (shakespeare_char's scale: every high byte 0), enough for the smoke profile.
    (tmp_path / "train.bin").write_bytes(b"".join(i.to_bytes(2, "little") for i in range(64, 0, -1)) * 40)
    return tmp_path


@pytest.mark.parametrize("args,line", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_line_and_exit_2(args, line, tmp, cli_result):
    argv = [a.format(tmp=tmp) for a in args]
    if not any(a.startswith(("hydra.sweep.dir", "hydra.run.dir")) for a in argv):
        argv += [f"hydra.sweep.dir={tmp}/sweep", f"hydra.run.dir={tmp}/run"]
    assert cli_result(argv) == (2, [error_line("run", line.format(tmp=tmp))])
    assert not (tmp / "sweep").exists() and not (tmp / "run").exists()  # nothing ran, nothing was left


@pytest.mark.parametrize("args,points", [
    (["+sweep=norm"], 2),  # a config group is not a key
    (["+hydra.job.env_set.BLOCKBENCH_X=1"], 1),  # Hydra's own keys are Hydra's business
    (["attn=gqa", "+sweep=kv"], 5),
])
def test_adding_a_group_or_a_hydra_key_stays_allowed(args, points):
    assert len(cli.plan_run(args)) == points


def test_the_folder_check_leaves_nothing_behind(tmp_path):
    folder = tmp_path / "a" / "b" / "sweep"
    assert len(cli.plan_run(["+sweep=norm", f"hydra.sweep.dir={folder}"])) == 2
    assert list(tmp_path.iterdir()) == []  # the run creates its own folder; the check removed what it made


# Faults of a folder that exists: root writes anywhere, so the refusal is injected where the check writes.
FOLDER_FAULTS = {
    "read-only folder with earlier points": (errno.EACCES, "cannot write in the output folder (Permission denied)"),
    "full disk before the start": (errno.ENOSPC, "cannot write in the output folder (No space left on device)"),
    "read-only filesystem": (errno.EROFS, "cannot write in the output folder (Read-only file system)"),
}


@pytest.mark.parametrize("err,problem", FOLDER_FAULTS.values(), ids=FOLDER_FAULTS.keys())
def test_an_existing_folder_that_refuses_writes(err, problem, tmp_path, cli_result, monkeypatch):
    (tmp_path / POINTS_DIR).mkdir()
    (tmp_path / POINTS_DIR / "gpt2-0123456789ab.csv").write_text("status\nok\n")

    def refuse(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(durable.tempfile, "NamedTemporaryFile", refuse)
    status, lines = cli_result(["+sweep=norm", f"hydra.sweep.dir={tmp_path}"])
    assert (status, lines) == (2, [f"blockbench run: error: hydra.sweep.dir={tmp_path}: {problem}"])
    assert (tmp_path / POINTS_DIR / "gpt2-0123456789ab.csv").read_text() == "status\nok\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_a_read_only_folder_for_real(tmp_path, cli_result):
    tmp_path.chmod(0o500)
    try:
        status, lines = cli_result(["+sweep=norm", f"hydra.sweep.dir={tmp_path}"])
    finally:
        tmp_path.chmod(0o700)
    assert (status, lines) == (2, [f"blockbench run: error: hydra.sweep.dir={tmp_path}: cannot write in the output "
                                   "folder (Permission denied)"])


def run(args: list[str], folder: Path, fault: str = "", **environ: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(INJECT), os.environ.get("PYTHONPATH")])),
               BLOCKBENCH_FAULT=fault, **environ)
    return subprocess.run([sys.executable, "-m", "ablations", *args, f"hydra.sweep.dir={folder}"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("blockbench run: error:")]


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*") if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_a_job_folder_hydra_cannot_create_is_one_line(tmp_path):
    # The sweep folder is writable, so the check passes; Hydra's own work then fails (job 0's folder name is
    # taken by a file): that too is one line, not Hydra's traceback, whatever the caller's HYDRA_FULL_ERROR (with
    # 0 exported, Hydra printed its own traceback: the one thing in the environment this test was found to need).
    (tmp_path / "0").write_text("")
    proc = run(QUICK, tmp_path, HYDRA_FULL_ERROR="0")
    assert proc.returncode == 1
    assert error_lines(proc) == [f"blockbench run: error: {tmp_path / '0'}: File exists"]
    assert not (tmp_path / POINTS_DIR).exists()


# Extended: tests/ablations/test_points.py refuses the point's write and reruns in-process; the one-line route out
# of a job is the corpus fault's below.
@pytest.mark.slow
@pytest.mark.extended
def test_disk_full_at_a_point_keeps_the_earlier_point_and_a_rerun_reuses_it(tmp_path):
    proc = run(QUICK, tmp_path, fault="full:rmsnorm-")
    assert proc.returncode == 1
    points = tmp_path / POINTS_DIR
    [kept] = points.glob("gpt2-*.csv")
    [line] = error_lines(proc)
    assert re.fullmatch(rf"blockbench run: error: {re.escape(str(points))}/rmsnorm-[0-9a-f]{{12}}\.csv: cannot write "
                        r"\(No space left on device\)", line), line
    assert proc.stderr.strip().splitlines()[-1] == line  # the last word, not followed by a summary of "ok"s
    assert [p.name for p in points.iterdir()] == [kept.name]  # no temporary file, no part of the failed point
    assert point_done(kept) and not (tmp_path / "results.csv").exists()
    before = kept.read_bytes()

    proc = run(QUICK, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 ok, 0 failed, 1 skipped" in proc.stderr
    assert kept.read_bytes() == before
    assert set(pd.read_csv(tmp_path / "results.csv")["variant"]) == {"gpt2", "rmsnorm"}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"The quick brown fox jumps over the lazy dog.\n" * 40)
    return path


FAULTS = {
    # file the disk fills on -> the line's path (relative to the sweep folder) and problem; what stays
    "table": ("full:results.csv", "{sweep}/results.csv: cannot write (No space left on device)", 2),
    "report": ("full:REPORT.md", "{sweep}/REPORT.md: cannot write (No space left on device)", 2),
    "figure": ("full:.png", "{sweep}/figures/norm-training-curves.png: cannot write (No space left on device)", 2),
    "corpus unreadable after the check": ("unreadable:{corpus}", "data.path={corpus} cannot be read: "
                                          "Permission denied", 0),
}


# Extended: a figure and the table are written through the same write_atomic, and stopped by the same handler in
# the sweep's end (ablations.sweep.end.finish), as REPORT.md, whose fault stays here.
EXTENDED_FAULTS = {"figure", "table"}


@pytest.mark.slow
@pytest.mark.parametrize("fault,line,points", [
    pytest.param(*v, id=k, marks=[pytest.mark.extended] if k in EXTENDED_FAULTS else []) for k, v in FAULTS.items()])
def test_a_fault_during_the_run_is_one_line_and_exit_1(fault, line, points, tmp_path, corpus):
    sweep = tmp_path / "sweep"
    drawn = ["figures=true"] if fault.endswith(".png") else []  # a figure's disk fault needs figures drawn
    proc = run([*QUICK, *drawn, f"data.path={corpus}"], sweep, fault=fault.format(corpus=corpus))
    assert proc.returncode == 1
    assert error_lines(proc) == [f"blockbench run: error: {line.format(sweep=sweep, corpus=corpus)}"]
    assert leftovers(sweep) == []
    written = sorted((sweep / POINTS_DIR).glob("*.csv"))
    assert len(written) == points and all(point_done(p) for p in written)


def test_a_report_that_fails_is_one_line_exit_1_and_keeps_the_table(tmp_path, monkeypatch, capsys):
    # A bug in the report (not the disk): one line and exit 1, the table kept.
    from ablations.report import markdown
    from ablations.results.store import write_point
    from ablations.sweep.end import finish

    write_point([{"point": "gpt2", "variant": "gpt2", "status": "ok"}], tmp_path / POINTS_DIR / "gpt2-0123456789ab.csv")

    def broken(folder: Path, draw_figures: bool) -> Path:
        raise ValueError("no column 'x'\nin the table")

    monkeypatch.setattr(markdown, "build_report", broken)
    with pytest.raises(Fault) as stop:
        finish(SweepEnd(tmp_path), ["ok"])
    assert stop.value.code == 1 and stop.value.message == (
        f"the report could not be built (ValueError: no column 'x' in the table); the measurements "
        f"are in {tmp_path / 'results.csv'}: rebuild with blockbench report {tmp_path}")
    assert set(pd.read_csv(tmp_path / "results.csv")["point"]) == {"gpt2"}
