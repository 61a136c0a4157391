"""The corpus: offline, hashed, split deterministically; a bad data.path is one line before any training."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.quality import tokens
from ablations.quality.corpus_files import stdlib_files
from ablations.quality.data import load_corpus
from ablations.quality.data_checks import min_bytes
from tests.quality.helpers import quality_rows


def test_stdlib_corpus_is_sorted_hashed_and_split():
    files = stdlib_files()
    assert files and all(f.suffix == ".py" for f in files)
    assert not any("site-packages" in f.parts for f in files)
    corpus = load_corpus()
    total = len(corpus.train) + len(corpus.val)
    assert len(corpus.sha256) == 64 and total > 1_000_000 and (corpus.vocab, corpus.unit) == (256, "byte")
    assert len(corpus.val) == int(0.1 * total)
    raw = b"".join(f.read_bytes() for f in files)
    assert bytes(corpus.val[:100].tolist()) == raw[len(corpus.train):][:100]


def _error(args: list[str], capsys) -> str:
    with pytest.raises(UsageError) as exit_info:
        plan_run(args)
    assert exit_info.value.code == 2
    err = exit_info.value.message
    assert err.count("\n") == 0 and err.startswith("data.path="), err
    return err


def test_missing_file(tmp_path, capsys):
    assert "does not exist" in _error([f"data.path={tmp_path / 'nope.txt'}"], capsys)


def test_empty_file(tmp_path, capsys):
    (tmp_path / "empty.txt").write_bytes(b"")
    assert "is empty" in _error([f"data.path={tmp_path / 'empty.txt'}"], capsys)


def test_too_small_file(tmp_path, capsys):
    (tmp_path / "small.txt").write_text("print('hello')\n" * 10)
    err = _error([f"data.path={tmp_path / 'small.txt'}"], capsys)
    assert f"has 150 bytes; at least {min_bytes(128, 4, 0.1)} are needed" in err


def test_unreadable_file(tmp_path, capsys, monkeypatch):
    path = tmp_path / "locked.txt"
    path.write_text("x" * 10_000)

    def refuse(p):  # what a file without read permission does (root reads anything, so chmod cannot show it)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tokens, "_probe", refuse)
    assert "cannot be read: Permission denied" in _error([f"data.path={path}"], capsys)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_unreadable_file_for_real(tmp_path, capsys):
    path = tmp_path / "locked.txt"
    path.write_text("x" * 10_000)
    path.chmod(0)
    assert "cannot be read" in _error([f"data.path={path}"], capsys)


def test_a_directory_is_not_a_text_file(tmp_path, capsys):
    assert "not a regular file" in _error([f"data.path={tmp_path}"], capsys)


def test_quality_off_skips_the_data_check(tmp_path):
    assert len(plan_run([f"data.path={tmp_path / 'nope.txt'}", "train.enabled=false"])) == 1


def test_cli_refuses_before_any_work(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ablations", "+sweep=norm", f"data.path={tmp_path / 'nope.txt'}",
         f"hydra.sweep.dir={tmp_path}"], capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"blockbench run: error: data.path={tmp_path / 'nope.txt'} does not exist; give a readable text file "
        "(empty = the Python stdlib)"
    ]
    assert not (tmp_path / "points").exists()


def test_a_users_text_file_trains_and_is_hashed(tmp_path):
    import hashlib

    text = ("The quick brown fox jumps over the lazy dog. " * 200).encode()
    (tmp_path / "fox.txt").write_bytes(text)
    status, rows = quality_rows(f"data.path={tmp_path / 'fox.txt'}", "train.steps=6")
    assert status == "ok"
    assert {r["corpus"] for r in rows} == {hashlib.sha256(text).hexdigest()}
