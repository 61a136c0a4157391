"""How every blockbench command stops: one line on stderr and an exit status, never a traceback.

The line is ``blockbench <command>: error: <message>``, whether the command was started as ``blockbench <command>``
or ``python -m ...``; the status is 2 for bad input (or an environment that cannot run it, found before any work)
and 1 for a fault of the environment while the run worked (a full disk, a corpus gone). A command raises
``UsageError`` or ``Fault`` with the message alone; ``command(NAME)``, around the command's ``main``, prints the
line and returns the status. A command's own checks turn what it reads wrong (a missing table, a bad revision)
into one of the two at its edge.

Both are ``SystemExit``: Hydra guards a job and each callback with ``except Exception`` (a job's exception
becomes one failed job and the sweep goes on; a callback's becomes a warning and exit status 0), and these
must pass through both to the command. Below every stage: this module imports nothing of ``ablations``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

PROG = "blockbench"


def prog(command: str) -> str:
    """The command's name as its usage and its error line show it: ``blockbench report`` (``blockbench`` alone
    for the dispatcher's own errors)."""
    return f"{PROG} {command}" if command else PROG


def error_line(command: str, message: str) -> str:
    return f"{prog(command)}: error: {message}"


class CommandError(SystemExit):
    """A command stops with ``message`` (one line) and exit status ``status``."""

    status = 1

    def __init__(self, message: str) -> None:
        super().__init__(self.status)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple:
        # joblib's workers send a job's exception to the parent pickled: the parent prints the same line.
        return type(self), (self.message,)


class UsageError(CommandError):
    """Bad input, or an environment that cannot run it, found before any work: status 2."""

    status = 2


class Fault(CommandError):
    """The environment failed while the run worked (a full disk, a corpus gone): status 1."""

    status = 1


Main = Callable[[list[str] | None], int | None]


def command(name: str) -> Callable[[Main], Callable[[list[str] | None], int]]:
    """``main(argv)`` as the command ``name``: a ``UsageError`` or ``Fault`` becomes its one line on stderr and
    its status, a reader that closed the pipe (``--help | head``) status 1 and nothing more; otherwise main's own
    status (None is 0)."""

    def wrap(main: Main) -> Callable[[list[str] | None], int]:
        @functools.wraps(main)
        def run(argv: list[str] | None = None) -> int:
            try:
                return main(argv) or 0
            except CommandError as exc:
                print(error_line(name, exc.message + _broken_plugins(exc)), file=sys.stderr)
                return exc.status
            except BrokenPipeError:  # ``--help | head``: the reader left; say nothing more
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 1

        run.command = name  # type: ignore[attr-defined]
        return run

    return wrap


def _broken_plugins(exc: CommandError) -> str:
    """Bad input while an installed plugin was skipped for failing to import: it may be what the input named, so
    the line says so (``components.plugins``; read only if loaded, so this module still imports nothing)."""
    plugins = sys.modules.get("components.plugins")
    return plugins.broken_note() if plugins is not None and isinstance(exc, UsageError) else ""


def os_error_line(exc: OSError) -> str:
    """``WriteError`` and ``CorpusError`` are one line already; any other OSError says file and reason."""
    if exc.strerror is None:
        return str(exc)
    return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
