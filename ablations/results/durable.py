"""Files that survive faults: written whole or not at all, on disk before anyone is told they are done.

A result file is written under a temporary name beside its target, flushed and fsynced, renamed over the
target, and then the folder is fsynced, because a rename is only durable once the folder's entry is: without
both, a power cut can leave a finished point's name on an empty file. A write that fails (a full disk) removes
its temporary file and leaves the previous version of the target untouched.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


class WriteError(OSError):
    """A result file that could not be written; its message names the file and the reason, in one line."""


def fsync_dir(folder: Path) -> None:
    """Make the entries of ``folder`` (a rename, a new file or subfolder) durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_folder(folder: Path) -> None:
    """``mkdir -p`` that also makes each new folder's entry in its parent durable."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
        fsync_dir(path.parent)


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through ``write(file)``; on any failure raise ``WriteError`` and leave no partial file."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        make_folder(path.parent)
        # Not mkstemp: its files are private (0600); a results file gets the umask's mode like any other.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _refused(path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _refused(path, exc) from exc
        raise


def _refused(path: Path, exc: OSError) -> WriteError:
    return WriteError(f"{path}: cannot write ({exc.strerror or exc})")


def probe_folder(folder: Path) -> str | None:
    """Why a run could not write its files in ``folder``, or None. Folders it has to create for the test are
    removed again: the run creates its own (a timestamped one may get a different name)."""
    if folder.exists() and not folder.is_dir():
        return "exists and is not a folder"
    created: list[Path] = []
    try:
        for path in reversed([p for p in (folder, *folder.parents) if not p.exists()]):
            try:
                path.mkdir()
            except OSError as exc:
                return f"cannot create the output folder ({exc.strerror or exc})"
            created.append(path)
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-") as f:
                f.write(b"0")
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            return f"cannot write in the output folder ({exc.strerror or exc})"
        return None
    finally:
        for path in reversed(created):
            path.rmdir()
