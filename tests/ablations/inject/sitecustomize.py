"""Put this folder on PYTHONPATH and set ``BLOCKBENCH_FAULT`` to run ``python -m ablations`` (and every worker
process it starts) with a fault of the environment injected, so a test watches a real sweep meet it:

- ``full:NAME``: the disk fills while a file whose name contains NAME is written: its fsync fails with
  ENOSPC after the data went into the temporary file, as a delayed-allocation filesystem reports it;
- ``unreadable:PATH``: reading PATH's bytes fails with EACCES, as a corpus that lost its permissions after
  the check (which opens it and reads one byte, so it still passes).
"""

import errno
import os
import pathlib

_spec = os.environ.get("BLOCKBENCH_FAULT", "")
_kind, _, _arg = _spec.partition(":")

if _kind == "full":
    _real_fsync = os.fsync

    def _fsync(fd: int) -> None:
        if _arg in os.path.basename(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        _real_fsync(fd)

    os.fsync = _fsync
elif _kind == "unreadable":
    _real_read = pathlib.Path.read_bytes

    def _read_bytes(self: pathlib.Path) -> bytes:
        if str(self) == _arg:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return _real_read(self)

    pathlib.Path.read_bytes = _read_bytes
elif _spec:
    raise SystemExit(f"BLOCKBENCH_FAULT={_spec!r}: expected full:NAME or unreadable:PATH")
