"""Token files (nanoGPT's headerless uint16, llm.c's shards): memory-mapped, checked once, one line per bad file;
the vocabulary reaches the quality model, its parameters and the rows; bytes stay the default."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from ablations.cli import hydra_main, plan_run
from ablations.config.errors import UsageError
from ablations.config.plan import SweepEnd
from ablations.quality.__main__ import report as quality_report
from ablations.quality.data import data_format, open_corpus, vocab_of
from ablations.quality.tokens import GPT2_VOCAB, LLMC_HEADER_INTS, LLMC_MAGIC, LLMC_VERSION, MAX_VOCAB, open_tokens
from ablations.quality.windows import windows
from ablations.results.identity import point_identity
from ablations.runner import plan_point
from ablations.sweep.end import finish
from components import build_lm, count_parameters
from tests.ablations.jobs import job_config
from tests.quality.helpers import composed, quality_rows

VOCAB = 50
# A repeating sentence of ids: enough structure that a few steps lower the loss, long enough for the smoke windows.
IDS = np.tile(np.arange(VOCAB, dtype=np.uint16)[::-1], 60)


def nanogpt(path: Path, ids: np.ndarray = IDS) -> Path:
    np.asarray(ids, dtype="<u2").tofile(path)
    return path


def llmc(path: Path, ids: np.ndarray = IDS, magic: int = LLMC_MAGIC, version: int = LLMC_VERSION,
         count: int | None = None) -> Path:
    header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
    header[:3] = magic, version, len(ids) if count is None else count
    path.write_bytes(header.tobytes() + np.asarray(ids, dtype="<u2").tobytes())
    return path


def pair(tmp_path: Path, fmt: str) -> list[str]:
    """Overrides for a generated train/val pair of ``fmt``."""
    write = nanogpt if fmt == "nanogpt" else llmc
    train, val = write(tmp_path / "train.bin"), write(tmp_path / "val.bin")
    return [f"data.format={fmt}", f"data.path={train}", f"data.val_path={val}", f"data.vocab_size={VOCAB}"]


def _error(args: list[str]) -> str:
    with pytest.raises(UsageError) as exit_info:
        plan_run(["profile=smoke", "model=tiny", *args])
    assert exit_info.value.code == 2
    assert exit_info.value.message.count("\n") == 0, exit_info.value.message
    return exit_info.value.message


@pytest.mark.parametrize("fmt", ["nanogpt", "llmc"])
def test_each_format_is_memory_mapped_hashed_and_scanned(tmp_path, fmt):
    path = (nanogpt if fmt == "nanogpt" else llmc)(tmp_path / "t.bin")
    f = open_tokens(str(path), "data.path", fmt)
    tokens = f.tokens()
    assert isinstance(tokens, np.memmap) and tokens.dtype == np.uint16
    assert np.array_equal(tokens, IDS) and (f.count, f.max_id) == (len(IDS), VOCAB - 1)
    assert f.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_windows_of_a_memory_map_are_the_windows_of_the_same_ids_in_memory(tmp_path):
    tokens = open_tokens(str(nanogpt(tmp_path / "t.bin")), "data.path", "nanogpt").tokens()
    starts = torch.tensor([[0, 7], [100, 2900]])
    got = windows(tokens, starts, 33)
    assert got.dtype == torch.int64 and torch.equal(got, windows(torch.from_numpy(IDS.astype(np.int64)), starts, 33))


def test_auto_reads_an_llmc_shard_by_its_magic_and_anything_else_as_bytes(tmp_path):
    shard = composed(*pair(tmp_path, "llmc")[1:3])  # format left at auto, vocabulary left at GPT-2's
    assert (data_format(shard.data), vocab_of(shard.data)) == ("llmc", GPT2_VOCAB)
    (tmp_path / "text.txt").write_text("x" * 10_000)
    text = composed(f"data.path={tmp_path / 'text.txt'}")
    assert (data_format(text.data), vocab_of(text.data)) == ("bytes", 256)


def test_bytes_stay_the_default_and_keep_their_identity():
    cfg = composed()
    assert (data_format(cfg.data), vocab_of(cfg.data)) == ("bytes", 256)
    assert point_identity(cfg)["data"] == {"path": "", "val_fraction": 0.1}  # the keys every earlier point had
    assert point_identity(composed("data.format=bytes"))["data"]["format"] == "bytes"


@pytest.mark.parametrize("fmt", ["nanogpt", "llmc"])
def test_the_vocabulary_reaches_the_quality_model_and_its_parameters(tmp_path, fmt):
    cfg = composed(*pair(tmp_path, fmt))
    q = plan_point(cfg).quality.arch
    assert q.model.vocab_size == VOCAB
    as_bytes = plan_point(composed()).quality.arch
    # Embedding and untied head both change by (256 - VOCAB) x d_model; nothing else does.
    per_row = 1 if q.model.tie_embeddings else 2
    assert count_parameters(build_lm(as_bytes, device="meta")) - count_parameters(build_lm(q, device="meta")) \
        == per_row * (256 - VOCAB) * q.model.d_model


@pytest.mark.parametrize("fmt", ["nanogpt", "llmc"])
def test_a_token_pair_trains_and_its_rows_say_tokens(tmp_path, fmt):
    overrides = pair(tmp_path, fmt)
    status, rows = quality_rows(*overrides, "train.steps=6", "train.eval_interval=3")
    assert status == "ok"
    frame = pd.DataFrame(rows)
    assert set(frame["vocab_size"]) == {VOCAB}
    assert set(frame.loc[frame["metric"].str.endswith("_loss"), "unit"]) == {"nats/token"}
    assert not frame["metric"].str.endswith("_bpb").any()  # bits per byte would be per token here
    assert set(frame["corpus"]) == {open_corpus(composed(*overrides).data).sha256}
    final = frame[(frame["metric"] == "val_loss") & (frame["mode"] == "final")]["value"].item()
    assert final < np.log(VOCAB)  # below a uniform guess over the vocabulary: the ids were read as ids


def test_bytes_rows_keep_bits_per_byte_and_the_byte_vocabulary(tmp_path):
    (tmp_path / "fox.txt").write_bytes(b"The quick brown fox jumps over the lazy dog. " * 200)
    status, rows = quality_rows(f"data.path={tmp_path / 'fox.txt'}", "train.steps=6")
    frame = pd.DataFrame(rows)
    assert status == "ok" and set(frame["vocab_size"]) == {256}
    assert "val_bpb" in set(frame["metric"]) and "nats/byte" in set(frame["unit"])


def test_bad_token_files_are_one_line_each(tmp_path):
    good = nanogpt(tmp_path / "good.bin")
    shard = llmc(tmp_path / "shard.bin")
    base = [f"data.val_path={good}", f"data.vocab_size={VOCAB}"]
    cases = {
        "wrong magic": (["data.format=llmc", f"data.path={good}", *base],
                        f"data.path={good} is not an llm.c shard: magic "),
        "wrong version": (["data.format=llmc", f"data.path={llmc(tmp_path / 'v2.bin', version=2)}", *base],
                          "is llm.c version 2; only version 1"),
        "size": (["data.format=llmc", f"data.path={llmc(tmp_path / 'cut.bin', count=len(IDS) + 1)}", *base],
                 f"but its header's {len(IDS) + 1} tokens make 1024 + 2 x {len(IDS) + 1}"),
        "a shard as headerless": (["data.format=nanogpt", f"data.path={shard}", *base],
                                  "starts with llm.c's magic 20240520"),
        "odd size": (["data.format=nanogpt", f"data.path={tmp_path / 'odd.bin'}", *base],
                     "an odd number: not nanoGPT's uint16 token ids"),
        "id past the vocabulary": (["data.format=nanogpt", f"data.path={good}", f"data.val_path={good}",
                                    "data.vocab_size=20"], f"data.path={good} holds token id {VOCAB - 1}, at or past"),
        "too short": (["data.format=nanogpt", f"data.path={nanogpt(tmp_path / 'short.bin', IDS[:20])}", *base],
                      "holds 20 tokens, too few for one training window"),
        "validation too short": (["data.format=nanogpt", f"data.path={good}", f"data.vocab_size={VOCAB}",
                                  f"data.val_path={nanogpt(tmp_path / 'vshort.bin', IDS[:100])}"],
                                 "holds 100 tokens, too few for one 4x32+1-token evaluation span"),
        "validation missing": (["data.format=nanogpt", f"data.path={good}", f"data.vocab_size={VOCAB}",
                                f"data.val_path={tmp_path / 'val.bin'}"],
                               f"data.val_path={tmp_path / 'val.bin'} does not exist"),
        "validation not given": (["data.format=llmc", f"data.path={shard}"],
                                 "data.val_path is empty; data.format=llmc needs the validation token file"),
        "nanoGPT without a vocabulary": (["data.format=nanogpt", f"data.path={good}", f"data.val_path={good}"],
                                         "data.vocab_size is null; nanoGPT's files do not say their vocabulary"),
        "vocabulary past uint16": (["data.format=nanogpt", f"data.path={good}", f"data.val_path={good}",
                                    f"data.vocab_size={MAX_VOCAB + 1}"], f"must be between 2 and {MAX_VOCAB}"),
        "token keys on bytes": ([f"data.val_path={good}"], "applies to token files"),
        "a format not known": (["data.format=parquet"], "data.format"),
    }
    (tmp_path / "odd.bin").write_bytes(b"\x01\x00\x02")
    for name, (args, expected) in cases.items():
        assert expected in _error(args), name


# Extended: test_bad_token_files_are_one_line_each checks the line in-process, test_data the CLI's path for a bad file.
@pytest.mark.extended
def test_the_cli_refuses_a_bad_shard_before_any_work(tmp_path):
    shard = llmc(tmp_path / "cut.bin", count=7)
    proc = subprocess.run(
        [sys.executable, "-m", "ablations", "profile=smoke", "model=tiny", "measure=false", f"data.path={shard}",
         f"data.val_path={shard}", f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"blockbench run: error: data.path={shard} has {1024 + 2 * len(IDS)} bytes, but its header's 7 tokens make "
        "1024 + 2 x 7 = 1038: a truncated or corrupt shard"]
    assert not (tmp_path / "run").exists()


def test_a_point_on_a_nanogpt_pair_end_to_end(tmp_path, as_job, capsys):
    """A sweep's point and its end in-process (tests/ablations/jobs.py); the command line's path for a token file
    is the extended tier's test_the_cli_refuses_a_bad_shard_before_any_work and tests/quality/test_data.py's."""
    folder = tmp_path / "sweep"
    cfg = job_config(folder, "variant=llama2", "measure=false", "train.enabled=true", "train.steps=6",
                     "train.eval_interval=3", "figures=false", *pair(tmp_path, "nanogpt"))
    as_job(cfg)
    assert hydra_main(cfg) == "ok"
    finish(SweepEnd(folder, figures=False), ["ok"])
    table = pd.read_csv(folder / "results.csv")
    # A point run alone is a comparison: it trains its baseline's seeds beside its own.
    assert set(table["variant"]) == {"llama2", "gpt2"} and set(table["status"]) == {"ok"}
    assert set(table["vocab_size"].dropna()) == {VOCAB}
    assert f"vocabulary {VOCAB} (losses in nats/token)" in " ".join((folder / "REPORT.md").read_text().split())
    assert "val_loss at 32 tokens (nats/token)" in quality_report(table)  # python -m ablations.quality
