"""The git revisions a check compares: a revision resolved to its commit, the merge base a pull request is measured
against, and the head commit's marker that says its slowdown is intended."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ablations.config.paths import ROOT

REPO = ROOT  # the repository: regress needs a source checkout
# A commit whose message carries this says its slowdown is intended: with --honour-marker the check reports
# the regression and exits 0.
INTENDED_MARKER = "[perf-intended]"


class SetupError(Exception):
    """The comparison cannot start: bad revision, a tree that does not import. One line for the user."""


def git(*args: str, repo: Path = REPO) -> str:
    """git's output in ``repo``, stripped; SetupError with its last error line when it fails."""
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if proc.returncode:
        raise SetupError(f"git {' '.join(args)}: {proc.stderr.strip().splitlines()[-1] if proc.stderr else 'failed'}")
    return proc.stdout.strip()


def resolve(rev: str, repo: Path = REPO) -> str:
    """The full commit hash of ``rev``; SetupError naming it when git does not know it."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", repo=repo)
    except SetupError:
        raise SetupError(f"BASE={rev!r} is not a git revision of {repo} (try HEAD~1, origin/main, a tag or a commit)") \
            from None


def merge_base(rev: str, repo: Path = REPO) -> str:
    """The commit where HEAD left ``rev``'s line: what a pull request's own changes are measured against (in
    blockbench's repository, or the plugin's)."""
    resolve(rev, repo)  # an unknown revision is named as such, not as a merge-base failure
    try:
        return git("merge-base", rev, "HEAD", repo=repo)
    except Exception:
        raise SetupError(f"BASE={rev!r} and HEAD have no merge base (unrelated histories?)") from None


def intended(root: Path, revision: str) -> str | None:
    """The head commit (12 characters) when its message carries ``INTENDED_MARKER`` and ``revision`` is that commit,
    not a working tree with uncommitted changes; else None."""
    message = git("log", "-1", "--format=%B", "HEAD", repo=root)
    return revision[:12] if INTENDED_MARKER in message and "+" not in revision else None
