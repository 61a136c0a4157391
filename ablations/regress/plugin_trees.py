"""The regression check for a plugin's author: two revisions of the plugin, blockbench held fixed.

``blockbench regress BASE --plugin-path DIR`` (or run inside the plugin's git checkout): the plugin's packages are
read from its ``pyproject.toml`` (the modules its ``blockbench.choices`` entry points name, found under ``src/`` or
the checkout's top); the base side is those packages at revision BASE of the plugin's repository (``git archive``),
the head side its working tree. Each side is a folder holding its plugin packages beside a copy of the installed
``components`` and ``blockbench``: the same blockbench code on both sides, imported apart (``trees.Tree``) so that
each side's plugin registers into its own registries.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

from ablations.config.errors import UsageError
from ablations.regress.revisions import REPO, SetupError, git, resolve
from ablations.regress.trees import Tree

GROUP = "blockbench.choices"  # components.plugins.GROUP, named here without importing the timed package
FIXED = ("components", "blockbench")


def plugin_root(path: Path) -> Path | None:
    """The plugin at or above ``path`` in a git checkout: the nearest folder whose ``pyproject.toml`` names
    ``blockbench.choices`` entry points, up to the checkout's top; else None."""
    try:
        top = Path(git("rev-parse", "--show-toplevel", repo=path)).resolve()
    except (SetupError, OSError):
        return None
    for folder in [path.resolve(), *path.resolve().parents]:
        if _entry_modules(folder):
            return folder
        if folder == top:
            break
    return None


def _entry_modules(top: Path) -> list[str]:
    try:
        project = tomllib.loads((top / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return []
    points = project.get("project", {}).get("entry-points", {}).get(GROUP, {})
    return [str(v).split(":")[0] for v in points.values()]


def plugin_packages(top: Path) -> dict[str, str]:
    """Each top package the plugin's entry points name, with its folder relative to the checkout."""
    out = {}
    for module in _entry_modules(top):
        name = module.split(".")[0]
        for folder in (f"src/{name}", name):
            if (top / folder).is_dir():
                out[name] = folder
                break
        else:
            raise SetupError(f"{top}: the entry point's package {name!r} is in neither src/{name}/ nor {name}/")
    if not out:
        raise SetupError(f"{top}/pyproject.toml: no [project.entry-points.\"{GROUP}\"]: not a blockbench plugin")
    return out


def _fixed_packages(root: Path) -> None:
    """Copy the installed blockbench packages (this process's) into ``root``: the same code on both sides."""
    import blockbench
    import components

    for module in (components, blockbench):
        src = Path(module.__file__ or "").parent
        shutil.copytree(src, root / src.name, ignore=shutil.ignore_patterns("__pycache__"))


def load_head_plugin(top: Path) -> list[str]:
    """The plugin's modules, imported into this process from its checkout unless an installed copy was loaded: the
    cases are read from the declarations this process holds. Returns the modules its entry points name."""
    from components.plugins import ENV, load_explicit, loaded, named_in_env

    modules = _entry_modules(top)
    if not any(p.module in modules for p in loaded()):
        # Named for each side's own loader too (``trees.Tree.load``), which finds the side's copy first on the path.
        os.environ[ENV] = ",".join(dict.fromkeys([*named_in_env(), *modules]))
        for folder in (top / "src", top):
            if any((folder / m.split(".")[0]).is_dir() for m in modules):
                sys.path.insert(0, str(folder))
                break
        load_explicit(modules)
    return modules


def plugin_trees(rev: str, top: Path, dest: Path) -> tuple[Tree, Tree]:
    """(base, head): the plugin at ``rev`` and as its working tree is, each beside the same blockbench."""
    packages = plugin_packages(top)
    sha = resolve(rev, top)
    timed = (*FIXED, *packages)
    sides = {}
    for label in ("base", "head"):
        root = dest / label
        root.mkdir(parents=True)
        _fixed_packages(root)
        sides[label] = root
    # The plugin's folder at BASE, which may sit below the checkout's top (an example inside another repository).
    prefix = git("rev-parse", "--show-prefix", repo=top)
    checkout = Path(git("rev-parse", "--show-toplevel", repo=top))
    proc = subprocess.run(["git", "archive", "--format=tar", f"{sha}:{prefix}", *packages.values()], cwd=checkout,
                          capture_output=True)
    if proc.returncode:
        raise SetupError(f"revision {sha[:12]} of {top} has no {', '.join(packages.values())}/ to time: "
                         f"{proc.stderr.decode().strip().splitlines()[-1]}")
    data = proc.stdout
    archived = dest / "archive"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(archived, filter="data")
    for name, folder in packages.items():
        if not (archived / folder).is_dir():
            raise SetupError(f"revision {sha[:12]} of {top} has no {folder}/ to time")
        shutil.copytree(archived / folder, sides["base"] / name)
        shutil.copytree(top / folder, sides["head"] / name, ignore=shutil.ignore_patterns("__pycache__"))
    head_rev = git("rev-parse", "HEAD", repo=top)
    dirty = git("status", "--porcelain", "--", *packages.values(), repo=top)
    return (Tree("base", sides["base"], sha, packages=timed),
            Tree("head", sides["head"], head_rev + ("+working tree" if dirty else ""), packages=timed))


def with_plugin(args: argparse.Namespace) -> None:
    """``args.plugin``: the plugin checkout to compare (``--plugin-path``, else the one around the working folder
    when that is not blockbench's own), its modules imported here; None to compare blockbench's revisions."""
    from components.plugins import PluginError

    path = args.plugin_path
    if path is not None and not path.is_dir():
        raise UsageError(f"--plugin-path={path}: not a folder")
    top = plugin_root(path if path is not None else Path.cwd())
    if path is not None and top is None:
        raise UsageError(f"--plugin-path={path}: no pyproject.toml with [project.entry-points.\"blockbench.choices\"] "
                         "in a git checkout there or above")
    args.plugin = top if top is not None and top.resolve() != REPO.resolve() else None
    try:
        args.plugin_modules = load_head_plugin(args.plugin) if args.plugin else []
    except PluginError as exc:
        raise UsageError(str(exc)) from None
