"""Offline training text, byte-level (vocabulary 256): the standard library's own sources, or a user's file.

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

import torch

from components.config import ConfigError

VOCAB = 256
# Installed packages differ per machine and many distributions ship the stdlib's tests separately
# (Debian: libpython3-testsuite), so leaving both out keeps the corpus the same wherever Python is.
EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test"})


@dataclass(frozen=True)
class Corpus:
    """The whole text as uint8, its hash, where it came from, and the train/validation split."""

    data: torch.Tensor
    sha256: str
    source: str
    train: torch.Tensor
    val: torch.Tensor


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


def check_data(path: str, context: int, max_factor: int, val_fraction: float) -> None:
    """Raise a one-line ``ConfigError`` naming ``data.path`` if the text cannot be trained on; reads no more
    than one byte, so every point of a sweep is checked before any training starts."""
    if not 0 < val_fraction < 1:
        raise ConfigError(f"data.val_fraction={val_fraction} must be between 0 and 1 (exclusive)")
    need = min_bytes(context, max_factor, val_fraction)
    if not path:
        if not stdlib_files():
            raise ConfigError(f"data.path is empty but no standard-library .py files were found under {stdlib_root()}; "
                              "give a text file with data.path=FILE")
        return
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"data.path={path} does not exist; give a readable text file (empty = the Python stdlib)")
    if not p.is_file():
        raise ConfigError(f"data.path={path} is not a regular file; give a readable text file")
    try:
        _probe(p)
        size = p.stat().st_size
    except OSError as exc:
        raise ConfigError(f"data.path={path} cannot be read: {exc.strerror or exc}") from None
    if size == 0:
        raise ConfigError(f"data.path={path} is empty; give a text file of at least {need} bytes")
    if size < need:
        raise ConfigError(
            f"data.path={path} has {size} bytes; at least {need} are needed (its last data.val_fraction={val_fraction} "
            f"must hold one {max_factor}x{context}+1-byte evaluation span); give a larger file or lower train.context"
        )


def _probe(path: Path) -> None:
    """Read one byte: existing is not enough (permissions, a file that vanishes, a device that errors)."""
    with path.open("rb") as f:
        f.read(1)


class CorpusError(OSError):
    """The corpus could not be read once the run had started (``check_data`` passed before): one line."""


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
    return Corpus(data, hashlib.sha256(raw).hexdigest(), source, data[: len(data) - n_val], data[len(data) - n_val :])


def train_starts(n_bytes: int, context: int, steps: int, batch: int, seed: int) -> torch.Tensor:
    """Start offsets of every training window, (steps, batch). Depends only on the seed and the sizes, so
    every variant of a seed sees the same bytes in the same order."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, n_bytes - context, (steps, batch), generator=gen)


def windows(data: torch.Tensor, starts: torch.Tensor, length: int) -> torch.Tensor:
    """Rows of ``length`` consecutive bytes at each start, as int64 token ids."""
    return data[starts[..., None] + torch.arange(length)].long()


def eval_spans(val: torch.Tensor, n_spans: int, span_len: int) -> torch.Tensor:
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
