"""A user's token files, memory-mapped and never read whole into memory: nanoGPT's and llm.c's formats.

- nanoGPT (``data/*/prepare.py``): ``train.bin`` / ``val.bin``, headerless uint16 token ids.
- llm.c (``dev/data/data_common.py``): a header of 256 little-endian int32 (magic 20240520, version 1, the token
  count), then that many uint16 ids. The magic is checked first, so a shard is never read as headerless tokens.

Opening a file checks it once and caches the result per (path, size, mtime): its header and size, and in one
chunked pass its sha256 (the rows' ``corpus``) and its largest id (an id at or past the vocabulary would index past
the embedding on the GPU, an opaque device assert, so it is refused here, before any work). Each bad file is one
``ConfigError`` line naming the key and the path.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from components.config import ConfigError

LLMC_MAGIC = 20240520
LLMC_VERSION = 1  # version 2 is llm.c's uint32 (Llama 3) shards: not read here
LLMC_HEADER_INTS = 256
LLMC_HEADER_BYTES = 4 * LLMC_HEADER_INTS
TOKEN = np.dtype("<u2")
# GPT-2's tokenizer, what llm.c's shards hold unless data.vocab_size says otherwise.
GPT2_VOCAB = 50257
# uint16 ids: a vocabulary past this could not be written in these files.
MAX_VOCAB = int(np.iinfo(TOKEN).max) + 1
# Bytes per read of the checking pass: bounded memory whatever the file's size.
SCAN_BYTES = 1 << 25


@dataclass(frozen=True)
class TokenFile:
    """A checked token file: where its ids start, how many, its sha256 and its largest id."""

    path: Path
    offset: int
    count: int
    sha256: str
    max_id: int

    def tokens(self) -> np.memmap:
        """The ids, memory-mapped read-only (the OS pages in what the windows touch)."""
        return np.memmap(self.path, dtype=TOKEN, mode="r", offset=self.offset, shape=(self.count,))


def readable_file(path: str, key: str, what: str, missing: str = "") -> Path:
    """``path`` as a regular, readable file, else one ``ConfigError`` naming ``key``; ``what`` says what to give,
    ``missing`` what else the key allows (said when the file does not exist)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{key}={path} does not exist; give {what}{missing}")
    if not p.is_file():
        raise ConfigError(f"{key}={path} is not a regular file; give {what}")
    try:
        _probe(p)
    except OSError as exc:
        raise ConfigError(f"{key}={path} cannot be read: {exc.strerror or exc}") from None
    return p


def _probe(path: Path) -> None:
    """Read one byte: existing is not enough (permissions, a file that vanishes, a device that errors)."""
    with path.open("rb") as f:
        f.read(1)


def has_llmc_magic(path: Path) -> bool:
    """Whether the file starts with llm.c's magic number (what ``data.format=auto`` reads as a shard)."""
    with path.open("rb") as f:
        head = f.read(4)
    return len(head) == 4 and int.from_bytes(head, "little", signed=True) == LLMC_MAGIC


def open_tokens(path: str, key: str, fmt: str) -> TokenFile:
    """Check ``path`` as a file of format ``fmt`` (``nanogpt`` or ``llmc``); one ``ConfigError`` line if it is not."""
    p = readable_file(path, key, f"a {fmt} token file")
    stat = p.stat()
    return _open(str(p.resolve()), stat.st_size, stat.st_mtime_ns, key, fmt)


@functools.lru_cache(maxsize=16)
def _open(path: str, size: int, mtime_ns: int, key: str, fmt: str) -> TokenFile:
    p = Path(path)
    where = f"{key}={path}"
    if fmt == "llmc":
        header = np.fromfile(p, dtype="<i4", count=LLMC_HEADER_INTS)
        if len(header) < LLMC_HEADER_INTS:
            raise ConfigError(f"{where} has {size} bytes, shorter than llm.c's {LLMC_HEADER_BYTES}-byte header")
        if header[0] != LLMC_MAGIC:
            raise ConfigError(f"{where} is not an llm.c shard: magic {header[0]}, expected {LLMC_MAGIC} "
                              "(nanoGPT's headerless .bin files: data.format=nanogpt)")
        if header[1] != LLMC_VERSION:
            raise ConfigError(f"{where} is llm.c version {header[1]}; only version {LLMC_VERSION} "
                              "(uint16 token ids) is read")
        count, offset = int(header[2]), LLMC_HEADER_BYTES
        if count < 0 or size != offset + TOKEN.itemsize * count:
            raise ConfigError(f"{where} has {size} bytes, but its header's {count} tokens make "
                              f"{offset} + {TOKEN.itemsize} x {count} = {offset + TOKEN.itemsize * count}: "
                              "a truncated or corrupt shard")
    else:
        if has_llmc_magic(p):
            raise ConfigError(f"{where} starts with llm.c's magic {LLMC_MAGIC}: a shard, not nanoGPT's headerless "
                              "tokens; use data.format=llmc (or auto)")
        if size % TOKEN.itemsize:
            raise ConfigError(f"{where} has {size} bytes, an odd number: not nanoGPT's uint16 token ids")
        count, offset = size // TOKEN.itemsize, 0
    digest, largest = hashlib.sha256(), -1
    with p.open("rb") as f:
        head = f.read(offset)
        digest.update(head)
        while chunk := f.read(SCAN_BYTES):
            digest.update(chunk)
            ids = np.frombuffer(chunk, dtype=TOKEN)  # SCAN_BYTES is even, so every chunk holds whole ids
            if len(ids):
                largest = max(largest, int(ids.max()))
    return TokenFile(p, offset, count, digest.hexdigest(), largest)
