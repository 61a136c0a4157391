"""The one error of the check's setup, decided before any timing: a revision git does not know, a tree that does
not import, a plugin checkout without its packages. The command says it in one line and exits 2."""

from __future__ import annotations


class SetupError(Exception):
    """The comparison cannot start: bad revision, a tree that does not import. One line for the user."""
