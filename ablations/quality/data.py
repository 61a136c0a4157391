"""The quality run's training data: bytes (vocabulary 256, the default) or a user's token files.

Bytes: the standard library's own sources, or a user's text file. Token files (nanoGPT's ``train.bin`` /
``val.bin``, llm.c's shards) are ``ablations.quality.tokens``' job; ``data.format`` picks, and ``open_corpus`` gives
either as a ``Corpus`` whose windows the training loop reads the same way.

Every machine that runs this has Python, so its standard library is a corpus that needs no download. Its
files are read in sorted path order and concatenated; the sha256 of the bytes goes into every quality row,
so two runs on different Pythons say that they trained on different text. The split is the tail: the last
``data.val_fraction`` of the bytes is validation, the same for every variant and seed.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig

from ablations.quality.tokens import GPT2_VOCAB, MAX_VOCAB, has_llmc_magic, open_tokens, readable_file
from components.config import ConfigError

VOCAB = 256
BYTES, NANOGPT, LLMC = "bytes", "nanogpt", "llmc"
# What each token format's files are, for the lines that ask for them.
TOKEN_FILES = {NANOGPT: ("nanoGPT's train.bin", "nanoGPT's val.bin"), LLMC: ("an llm.c train shard",
                                                                             "an llm.c val shard")}
# Installed packages differ per machine and many distributions ship the stdlib's tests separately
# (Debian: libpython3-testsuite), so leaving both out keeps the corpus the same wherever Python is.
EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test"})


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


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(root: Path | None = None) -> list[Path]:
    """The standard library's ``.py`` files in sorted relative-path order (the order is part of the corpus)."""
    return list(_stdlib_files(root or stdlib_root()))


@functools.lru_cache(maxsize=2)
def _stdlib_files(root: Path) -> tuple[Path, ...]:
    found = (p for p in root.rglob("*.py") if not EXCLUDED_DIRS.intersection(p.relative_to(root).parts[:-1]))
    return tuple(sorted(found, key=lambda p: p.relative_to(root).as_posix()))


def min_bytes(context: int, max_factor: int, val_fraction: float) -> int:
    """The smallest text that trains: the validation split holds one evaluation span (max_factor x context + 1
    bytes) and the training split one training window (context + 1)."""
    span = max_factor * context + 1
    return max(math.ceil(span / val_fraction), math.ceil((context + 1) / (1 - val_fraction)))


def data_format(dc: DictConfig) -> str:
    """``data.format`` with ``auto`` decided: an llm.c shard when ``data.path`` starts with llm.c's magic, else
    bytes (a file that cannot be read is bytes here, and ``check_data`` says why)."""
    fmt = str(dc.format)
    if fmt != "auto":
        return fmt
    try:
        return LLMC if dc.path and Path(dc.path).is_file() and has_llmc_magic(Path(dc.path)) else BYTES
    except OSError:
        return BYTES


def vocab_of(dc: DictConfig) -> int:
    """The quality model's vocabulary: 256 for bytes, ``data.vocab_size`` for token files (llm.c: GPT-2's by
    default)."""
    fmt = data_format(dc)
    if fmt == BYTES:
        return VOCAB
    return int(dc.vocab_size) if dc.vocab_size is not None else GPT2_VOCAB


def check_data(dc: DictConfig, context: int, max_factor: int) -> None:
    """Raise a one-line ``ConfigError`` naming the ``data.`` key (and file) if the data cannot be trained on. Bytes
    read no more than one byte; a token file is read once per process (``tokens.open_tokens``), so every point of
    a sweep is checked before any training starts."""
    fmt = data_format(dc)
    if fmt == BYTES:
        _check_bytes(dc, context, max_factor)
    else:
        _check_tokens(dc, fmt, context, max_factor)


def _check_bytes(dc: DictConfig, context: int, max_factor: int) -> None:
    path, val_fraction = dc.path, dc.val_fraction
    for key, unset in (("val_path", ""), ("vocab_size", None)):
        if dc[key] != unset:
            raise ConfigError(f"data.{key}={dc[key]} applies to token files (data.format=nanogpt or llmc); bytes "
                              f"have a vocabulary of {VOCAB} and split data.path by data.val_fraction")
    if not 0 < val_fraction < 1:
        raise ConfigError(f"data.val_fraction={val_fraction} must be between 0 and 1 (exclusive)")
    need = min_bytes(context, max_factor, val_fraction)
    if not path:
        if not stdlib_files():
            raise ConfigError(f"data.path is empty but no standard-library .py files were found under {stdlib_root()}; "
                              "give a text file with data.path=FILE")
        return
    p = readable_file(path, "data.path", "a readable text file", " (empty = the Python stdlib)")
    size = p.stat().st_size
    if size == 0:
        raise ConfigError(f"data.path={path} is empty; give a text file of at least {need} bytes")
    if size < need:
        raise ConfigError(
            f"data.path={path} has {size} bytes; at least {need} are needed (its last data.val_fraction={val_fraction} "
            f"must hold one {max_factor}x{context}+1-byte evaluation span); give a larger file or lower train.context"
        )


def _check_tokens(dc: DictConfig, fmt: str, context: int, max_factor: int) -> None:
    train_file, val_file = TOKEN_FILES[fmt]
    if not dc.path:
        raise ConfigError(f"data.path is empty; data.format={fmt} needs the training token file ({train_file})")
    if not dc.val_path:
        raise ConfigError(f"data.val_path is empty; data.format={fmt} needs the validation token file ({val_file})")
    if fmt == NANOGPT and dc.vocab_size is None:
        raise ConfigError("data.vocab_size is null; nanoGPT's files do not say their vocabulary: give it (50257 for "
                          "GPT-2's tokenizer, 65 for shakespeare_char)")
    vocab = vocab_of(dc)
    if not 2 <= vocab <= MAX_VOCAB:
        raise ConfigError(f"data.vocab_size={vocab} must be between 2 and {MAX_VOCAB} (the files hold uint16 ids)")
    # The training split needs one window (context + 1 ids); the validation split one evaluation span.
    for key, need, what in (("path", context + 1, f"one training window of train.context+1={context + 1}"),
                            ("val_path", max_factor * context + 1,
                             f"one {max_factor}x{context}+1-token evaluation span")):
        f = open_tokens(dc[key], f"data.{key}", fmt)
        if f.count < need:
            raise ConfigError(f"data.{key}={dc[key]} holds {f.count} tokens, too few for {what}; give a larger file "
                              "or lower train.context")
        if f.max_id >= vocab:
            raise ConfigError(f"data.{key}={dc[key]} holds token id {f.max_id}, at or past the vocabulary "
                              f"data.vocab_size={vocab}; give the tokenizer's vocabulary size")


class CorpusError(OSError):
    """The corpus could not be read once the run had started (``check_data`` passed before): one line."""


def open_corpus(dc: DictConfig) -> Corpus:
    """The corpus ``data`` describes (``check_data`` passed before); one that cannot be read now is a
    ``CorpusError``."""
    fmt = data_format(dc)
    if fmt == BYTES:
        return load_corpus(dc.path, dc.val_fraction)
    try:
        train, val = (open_tokens(dc[key], f"data.{key}", fmt) for key in ("path", "val_path"))
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


@functools.lru_cache(maxsize=4)
def _load(key: tuple[str, int], val_fraction: float) -> Corpus:
    path = key[0]
    if path:
        raw = Path(path).read_bytes()
        source = f"file {Path(path).resolve()}"
    else:
        root = stdlib_root()
        files = stdlib_files(root)
        raw = b"".join(f.read_bytes() for f in files)
        source = f"Python {sysconfig.get_python_version()} stdlib at {root} ({len(files)} .py files, tests excluded)"
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    n_val = int(len(data) * val_fraction)
    return Corpus(hashlib.sha256(raw).hexdigest(), source, data[: len(data) - n_val], data[len(data) - n_val :])


def train_starts(n_bytes: int, context: int, steps: int, batch: int, seed: int) -> torch.Tensor:
    """Start offsets of every training window, (steps, batch). Depends only on the seed and the sizes, so
    every variant of a seed sees the same bytes in the same order."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, n_bytes - context, (steps, batch), generator=gen)


def windows(data: Split, starts: torch.Tensor, length: int) -> torch.Tensor:
    """Rows of ``length`` consecutive ids at each start, as int64. A memory map is indexed with numpy, which reads
    only the pages the windows touch."""
    index = starts[..., None] + torch.arange(length)
    if isinstance(data, torch.Tensor):
        return data[index].long()
    return torch.from_numpy(np.asarray(data[index.numpy()], dtype=np.int64))


def eval_spans(val: Split, n_spans: int, span_len: int) -> torch.Tensor:
    """``n_spans`` fixed spans of ``span_len`` bytes spread evenly over the validation split (no randomness:
    every variant and seed is scored on the same bytes)."""
    last = len(val) - span_len
    starts = torch.linspace(0, last, n_spans).round().long() if n_spans > 1 else torch.zeros(1, dtype=torch.long)
    return windows(val, starts, span_len)


def chunk_spans(spans: torch.Tensor, length: int) -> torch.Tensor:
    """Cut spans of ``k * length + 1`` bytes into k windows of ``length + 1`` (input plus next byte), so every
    evaluation length predicts exactly the same target bytes and only the context differs."""
    k = (spans.shape[1] - 1) // length
    idx = torch.arange(k)[:, None] * length + torch.arange(length + 1)
    return spans[:, idx].reshape(-1, length + 1)
