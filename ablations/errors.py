"""How ``python -m ablations`` stops: one line on stderr and an exit status, never a traceback.

Both are ``SystemExit``: Hydra guards a job and each callback with ``except Exception`` (a job's exception
becomes one failed job and the sweep goes on; a callback's becomes a warning and exit status 0), and these
must pass through both.
"""

from __future__ import annotations

import sys

PREFIX = "ablations: error: "


class UsageError(SystemExit):
    """Bad input, or an environment that cannot run it, found before any work: status 2."""

    def __init__(self, message: str) -> None:
        print(f"{PREFIX}{message}", file=sys.stderr)
        super().__init__(2)


class Fault(SystemExit):
    """The environment failed while the run worked (a full disk, a corpus gone): status 1. Python prints the
    line when it exits, so a job in a worker process (joblib) prints it once, in the parent."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{PREFIX}{message}")
        self.message = message

    def __reduce__(self) -> tuple:
        return type(self), (self.message,)


def os_error_line(exc: OSError) -> str:
    """``WriteError`` and ``CorpusError`` are one line already; any other OSError says file and reason."""
    if exc.strerror is None:
        return str(exc)
    return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
