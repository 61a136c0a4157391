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
# data.format=auto: how much of data.path is read to tell text from token ids, and the share of control bytes among
# the bytes at odd offsets (uint16 ids' high bytes) past which the file is taken for ids (see not_text).
SNIFF_BYTES = 1 << 16
IDS_CONTROL_SHARE = 0.25
# C0 control bytes that text does not hold: all below 0x20 but tab, newline, vertical tab, form feed, carriage
# return and escape (terminal colours in a log). NUL is one, and a rule of its own.
TEXT_CONTROLS = frozenset({0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B})
CONTROL = np.array([b < 0x20 and b not in TEXT_CONTROLS for b in range(256)])


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


def not_text(path: Path) -> str | None:
    """Why ``data.format=auto`` must not read ``path`` as bytes, or None when it may be text. Reads at most
    ``SNIFF_BYTES`` (64 KiB) from the start; the first rule that holds is the reason:

    - a NUL byte in that block. Text in UTF-8, ASCII or any ASCII-based encoding never holds one (git and grep tell
      binary files the same way), while uint16 token ids hold one for every id below 256 (every id of a vocabulary
      of 256 or less, shakespeare_char's 65 among them) and every low byte that is 0 (one id in 256 at random, so
      about 128 in a block of 32768 ids of any vocabulary): this rule finds nanoGPT's files;
    - an even size, and at least a quarter (``IDS_CONTROL_SHARE``) of the block's bytes at odd offsets, the high
      bytes of little-endian uint16 ids, are control bytes text does not hold (``CONTROL``: below 0x20 but tab,
      newline, vertical tab, form feed, carriage return and escape). Ids 256 to 8191, a BPE vocabulary's most
      frequent, have their high byte there; text has next to none (the Python stdlib corpus and the English corpus
      none at all), so a quarter leaves text far on the other side. This catches a short file of ids without a NUL;
    - the suffix ``.bin``: nanoGPT's ``train.bin`` and ``val.bin``, and most binary dumps.

    UTF-8 text with non-ASCII characters passes (its multi-byte sequences are all 0x80 or above), and so does text
    in Latin-1 or another 8-bit encoding; UTF-16 text does not (its ASCII characters hold NULs), nor anything else
    binary: ``data.format=bytes`` reads any file as bytes."""
    with path.open("rb") as f:
        head = np.frombuffer(f.read(SNIFF_BYTES), dtype=np.uint8)
    nul = np.flatnonzero(head == 0)
    if len(nul):
        return f"a NUL byte at offset {nul[0]}, which text never holds"
    high = head[1::2]
    if path.stat().st_size % TOKEN.itemsize == 0 and len(high) and CONTROL[high].mean() >= IDS_CONTROL_SHARE:
        return (f"{CONTROL[high].mean():.0%} of its first {len(head)} bytes at odd offsets are control bytes, as "
                "uint16 token ids' high bytes are and text's are not")
    if path.suffix.lower() == ".bin":
        return "its name ends in .bin, as nanoGPT's token files' do"
    return None


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
