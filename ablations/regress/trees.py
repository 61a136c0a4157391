"""Two versions of the timed library in one process: the base revision's ``components`` and the working tree's.

Timing the two revisions in one process, round by round, is what lets load cancel (a whole run of one and
then of the other carries every change of machine load in between). Python keeps one module per name, so
each tree is imported on its own: its ``components*`` modules are loaded from its folder, taken out of
``sys.modules`` under a private key, and the previous modules put back. While a side builds its cases,
``Tree.active()`` puts its modules back under their real names, so the few imports the library does at
call time (``ArchConfig.validate`` imports the registries) resolve to the same tree.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from ablations.regress.revisions import REPO, SetupError, git, resolve
from ablations.regress.tree_compat import declarations_of

# The packages whose code is timed; everything else (torch, the harness, the case definitions) is shared.
TIMED_PACKAGES = ("components",)


def extract(sha: str, dest: Path, repo: Path = REPO) -> Path:
    """Write the timed packages of commit ``sha`` into ``dest`` (``git archive``: no worktree to clean up)."""
    missing = [p for p in TIMED_PACKAGES if not git("ls-tree", "--name-only", sha, p, repo=repo)]
    if missing:
        raise SetupError(f"revision {sha[:12]} has no {', '.join(missing)}/ package to time")
    data = subprocess.run(["git", "archive", "--format=tar", sha, *TIMED_PACKAGES], cwd=repo, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def timed_packages() -> tuple[str, ...]:
    """The packages each side imports apart: ``components``, and with plugins loaded (``components.plugins``) the
    ``blockbench`` API they import it through and each plugin's top package, so that every side's plugins register
    into that side's registries."""
    plugins = sys.modules.get("components.plugins")
    tops = [p.module.split(".")[0] for p in plugins.loaded()] if plugins is not None else []
    return tuple(dict.fromkeys([*TIMED_PACKAGES, *(["blockbench", *tops] if tops else [])]))


def _ours(name: str, packages: tuple[str, ...] = TIMED_PACKAGES) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


@dataclass
class Tree:
    """One side of the comparison: a folder holding the timed packages, imported apart from the other side."""

    label: str  # "base" or "head"
    root: Path
    revision: str  # commit hash, or the head's hash with "+working tree"
    modules: dict[str, ModuleType] = field(default_factory=dict)
    packages: tuple[str, ...] = field(default_factory=timed_packages)

    @property
    def components(self) -> ModuleType:
        return self.modules["components"]

    @contextlib.contextmanager
    def active(self) -> Iterator[ModuleType]:
        """This tree's modules under their real names for the duration (building its cases)."""
        saved = {k: sys.modules.pop(k) for k in list(sys.modules) if _ours(k, self.packages)}
        sys.modules.update(self.modules)
        try:
            yield self.components
        finally:
            for k in [k for k in sys.modules if _ours(k, self.packages)]:
                del sys.modules[k]
            sys.modules.update(saved)

    def load(self) -> Tree:
        """Import the tree's packages from ``root`` alone; SetupError with the reason when they do not import."""
        saved = {k: sys.modules.pop(k) for k in list(sys.modules) if _ours(k, self.packages)}
        sys.path.insert(0, str(self.root))
        try:
            for package in TIMED_PACKAGES:
                importlib.import_module(package)
                loaded = Path(sys.modules[package].__file__ or "").resolve()
                if self.root.resolve() not in loaded.parents:
                    raise ImportError(f"{package} came from {loaded}, not from {self.root}")
            # A tree that loads plugins imports them now, into its own registries (one without plugins has none).
            declarations_of(sys.modules["components"]).choices()
        except Exception as exc:  # any error while importing the tree is this tree's setup problem
            raise SetupError(f"the {self.label} tree ({self.revision[:12]}) does not import: "
                             f"{type(exc).__name__}: {exc}") from None
        finally:
            self.modules = {k: sys.modules.pop(k) for k in list(sys.modules) if _ours(k, self.packages)}
            sys.path.remove(str(self.root))
            sys.modules.update(saved)
        return self


def source_files(tree: Tree) -> dict[str, str]:
    """Every file of the packages ``tree`` loaded (each top package's folder, compiled files left out), as its path
    from the package's parent to the SHA-256 of its bytes: what the two sides' code is made of, including modules
    imported only at call time."""
    out: dict[str, str] = {}
    for name, module in tree.modules.items():
        if "." in name:
            continue
        if not hasattr(module, "__path__"):  # a plugin that is one module, not a package
            out[f"{name}.py"] = _digest(Path(module.__file__ or ""))
        for folder in map(Path, getattr(module, "__path__", [])):
            for f in folder.rglob("*"):
                if f.is_file() and "__pycache__" not in f.parts:
                    out[f"{name}/{f.relative_to(folder).as_posix()}"] = _digest(f)
    return dict(sorted(out.items()))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def identical_source(base: Tree, head: Tree) -> int:
    """How many files the two sides share when every file of their timed packages is byte for byte the same (the
    same names, the same bytes); 0 when any differs. Same source in one process is the same code: timing it
    measures noise only."""
    files = source_files(base)
    return len(files) if files and files == source_files(head) else 0


def head_tree(repo: Path = REPO) -> Tree:
    """The working tree as it is (uncommitted changes included): what the check is asked about."""
    rev = git("rev-parse", "HEAD", repo=repo)
    dirty = git("status", "--porcelain", "--", *TIMED_PACKAGES, repo=repo)  # new untracked modules count too
    return Tree("head", repo, rev + ("+working tree" if dirty else ""))


def base_tree(rev: str, dest: Path, repo: Path = REPO) -> Tree:
    sha = resolve(rev, repo)
    return Tree("base", extract(sha, dest, repo), sha)
