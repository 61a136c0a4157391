"""``data.format=auto`` does not guess silently: a file that does not look like text (a nanoGPT ``train.bin`` given
without ``data.format=nanogpt``) is refused in one line before any work, not trained on as bytes; text, llm.c shards
and ``data.format=bytes`` go through (``ablations.quality.tokens.not_text``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.quality.corpus_files import stdlib_files
from ablations.quality.data import data_format
from ablations.quality.tokens import SNIFF_BYTES, not_text
from tests.quality.helpers import composed
from tests.quality.test_tokens import IDS, llmc, nanogpt

# Enough bytes for the smoke profile's text (min_bytes at train.context=32); the ids are tests/quality/test_tokens's.
SMOKE = ["profile=smoke", "model=tiny"]
ADVICE = ("for nanoGPT's uint16 token ids set data.format=nanogpt with data.val_path=VAL.bin and data.vocab_size=N, "
          "or set data.format=bytes to train on its bytes anyway")


def refusal(path: Path, *args: str) -> str:
    with pytest.raises(UsageError) as exit_info:
        plan_run([*SMOKE, f"data.path={path}", *args])
    assert exit_info.value.code == 2
    line = exit_info.value.message
    assert line.count("\n") == 0, line
    return line


def accepted(path: Path, *args: str) -> None:
    assert len(plan_run([*SMOKE, f"data.path={path}", *args])) == 1


def test_a_nanogpt_train_bin_without_its_format_is_refused_in_one_line(tmp_path):
    path = nanogpt(tmp_path / "train.bin")
    assert refusal(path) == (f"data.format=auto would read data.path={path} as bytes, but it does not look like text "
                             f"(a NUL byte at offset 1, which text never holds); {ADVICE}")


def test_the_same_ids_under_another_name_are_refused_by_their_content(tmp_path):
    path = nanogpt(tmp_path / "train.tokens")
    line = refusal(path)
    assert line.startswith(f"data.format=auto would read data.path={path} as bytes") and "a NUL byte" in line


def test_ids_without_a_nul_are_refused_by_their_high_bytes(tmp_path):
    # Ids 257..511 and 1025..1279 with no low byte 0: not one NUL, every high byte a control byte (1 or 4).
    ids = np.concatenate([np.arange(257, 512), np.arange(1025, 1280)]).astype(np.uint16)
    path = nanogpt(tmp_path / "ids.dat", np.tile(ids, 8))
    assert 0 not in path.read_bytes()
    line = refusal(path)
    assert "100% of its first" in line and "bytes at odd offsets are control bytes" in line and ADVICE in line


def test_a_bin_suffix_is_refused_even_without_binary_content(tmp_path):
    path = tmp_path / "corpus.BIN"
    path.write_text("plain text, but named as a token file\n" * 200)
    assert "its name ends in .bin, as nanoGPT's token files' do" in refusal(path)


def test_utf8_text_with_non_ascii_characters_is_text(tmp_path):
    path = tmp_path / "utf8.txt"
    path.write_text("Grüße aus Köln — naïve café, 東京, Ελληνικά, emoji 🙂\tand tabs\r\n\f" * 100, encoding="utf-8")
    assert not_text(path) is None
    accepted(path)


def test_the_stdlib_corpus_is_text_file_by_file_and_joined(tmp_path):
    files = stdlib_files()
    assert [f for f in files if not_text(f)] == []
    joined = tmp_path / "stdlib.py"
    joined.write_bytes(b"".join(f.read_bytes() for f in files[:40]))
    assert joined.stat().st_size > SNIFF_BYTES and not_text(joined) is None


def test_data_format_bytes_reads_the_bin_as_bytes(tmp_path):
    path = nanogpt(tmp_path / "train.bin")
    accepted(path, "data.format=bytes")
    assert data_format(composed(f"data.path={path}", "data.format=bytes").data) == "bytes"


def test_an_llmc_shard_is_still_found_by_its_magic(tmp_path):
    shard, val = llmc(tmp_path / "train.bin"), llmc(tmp_path / "val.bin")
    assert data_format(composed(f"data.path={shard}").data) == "llmc"
    accepted(shard, f"data.val_path={val}", f"data.vocab_size={IDS.max() + 1}")


def test_only_the_first_block_is_read(tmp_path):
    path = tmp_path / "late.txt"
    path.write_bytes(b"text " * (SNIFF_BYTES // 5 + 1) + b"\x00")  # a NUL past the first 64 KiB
    assert not_text(path) is None
