"""Result files are durable: fsynced (file, then folder) before they count as written, whole or absent after a
fault, and readable by anyone the umask allows."""

from __future__ import annotations

import errno
import logging
import os
import pickle
from pathlib import Path

import pandas as pd
import pytest

from ablations.config.errors import Fault, os_error_line
from ablations.results import durable
from ablations.results.durable import WriteError, probe_folder, write_atomic
from ablations.results.store import COLUMNS, collect, point_done, write_frame, write_point, write_table


@pytest.fixture
def events(monkeypatch) -> list[tuple[str, str]]:
    """Every fsync (with the path its descriptor names) and every rename, in order."""
    seen: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst) -> None:
        real_replace(src, dst)
        seen.append(("replace", str(dst)))

    monkeypatch.setattr(durable.os, "fsync", fsync)
    monkeypatch.setattr(durable.os, "replace", replace)
    return seen


def test_the_file_is_fsynced_before_the_rename_and_the_folder_after(tmp_path, events):
    path = tmp_path / "points" / "gpt2-0123456789ab.csv"
    write_point([{"variant": "gpt2", "status": "ok"}], path)
    names = [(kind, Path(p).name) for kind, p in events]
    temp = next(n for k, n in names if k == "fsync" and n.startswith(".gpt2-"))
    assert names[-3:] == [("fsync", temp), ("replace", path.name), ("fsync", "points")]
    assert ("fsync", tmp_path.name) in names[:-3]  # the new points/ folder's entry in the sweep folder
    assert point_done(path)


def test_the_table_is_fsynced_too(tmp_path, events):
    write_point([{"variant": "gpt2", "status": "ok"}], tmp_path / "points" / "gpt2-0123456789ab.csv")
    events.clear()
    write_table(tmp_path)
    names = [(kind, Path(p).name) for kind, p in events]
    # With pyarrow installed results.parquet follows the same way; each file: its temporary fsynced, the rename,
    # then the folder's entry.
    at = names.index(("replace", "results.csv"))
    assert names[at - 1][0] == "fsync" and names[at - 1][1].startswith(".results.csv.")
    assert names[at + 1] == ("fsync", tmp_path.name)
    assert names[-1] == ("fsync", tmp_path.name)


def test_a_parquet_table_is_fsynced(tmp_path, events):
    pytest.importorskip("pyarrow")
    write_frame(pd.DataFrame({"a": [1]}), tmp_path / "results.parquet", fmt="parquet")
    assert [k for k, _ in events][-3:] == ["fsync", "replace", "fsync"]


@pytest.mark.parametrize("fails_at", ["write", "fsync"])
def test_a_full_disk_leaves_the_old_file_whole_and_no_temporary(fails_at, tmp_path, monkeypatch):
    path = tmp_path / "results.csv"
    path.write_text("the previous table\n")

    def full(*args) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def write(f) -> None:
        f.write(b"half a table")
        if fails_at == "write":
            full()

    if fails_at == "fsync":
        monkeypatch.setattr(durable.os, "fsync", full)
    with pytest.raises(WriteError) as err:
        write_atomic(path, write)
    assert str(err.value) == f"{path}: cannot write (No space left on device)"
    assert path.read_text() == "the previous table\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]


def test_an_interrupted_write_leaves_no_temporary(tmp_path):
    def interrupted(f) -> None:
        f.write(b"part")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "x.csv", interrupted)
    assert list(tmp_path.iterdir()) == []


def test_a_result_file_gets_the_umasks_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_point([{"status": "ok"}], tmp_path / "p.csv")
    finally:
        os.umask(old)
    assert (tmp_path / "p.csv").stat().st_mode & 0o777 == 0o644


def test_an_empty_or_corrupt_point_file_is_left_out_of_the_table_with_a_warning(tmp_path, caplog):
    write_point([{"variant": "gpt2", "status": "ok"}], tmp_path / "points" / "gpt2-0123456789ab.csv")
    (tmp_path / "points" / "old-000000000000.csv").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="ablations"):
        table = collect(tmp_path)
    assert list(table["variant"]) == ["gpt2"] and list(table.columns) == COLUMNS
    assert "old-000000000000.csv is empty or corrupt" in caplog.text


def test_probe_names_the_problem_and_removes_what_it_created(tmp_path):
    assert probe_folder(tmp_path / "new" / "deeper") is None
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("")
    assert probe_folder(tmp_path / "f") == "exists and is not a folder"
    assert probe_folder(tmp_path / "f" / "x") == "cannot create the output folder (Not a directory)"
    assert probe_folder(tmp_path) is None and sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_a_fault_survives_the_trip_from_a_worker_process():
    # joblib's workers send a job's exception to the parent pickled; the parent must print the same line.
    fault = pickle.loads(pickle.dumps(Fault("x.csv: cannot write (No space left on device)")))
    assert type(fault) is Fault and fault.code == 1
    assert fault.message == "x.csv: cannot write (No space left on device)"


@pytest.mark.parametrize("exc,line", [
    (WriteError("x.csv: cannot write (No space left on device)"), "x.csv: cannot write (No space left on device)"),
    (PermissionError(errno.EACCES, "Permission denied", "/r/1/.hydra"), "/r/1/.hydra: Permission denied"),
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
])
def test_an_os_error_is_one_line(exc, line):
    assert os_error_line(exc) == line
