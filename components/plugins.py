"""Plugins: a user's package that declares choices with the API the built-ins use, found without editing blockbench.

Two ways in, both imported once, on the first ``choices()`` call, after blockbench's own modules:

- an installed distribution names a module in the entry-point group ``blockbench.choices`` (its
  ``pyproject.toml``: ``[project.entry-points."blockbench.choices"] relu2 = "blockbench_relu2_softcap"``);
- a module that is not installed is named explicitly: ``plugins=[pkg.mod,...]`` on any ``blockbench`` command
  (``ablations.plugin_args``), which puts it in ``$BLOCKBENCH_PLUGINS`` so that the processes a command starts
  (Hydra's re-exec, launchers' workers) import it too.

Importing the module declares (``declare(Choice(...))``) and registers (``@FFNS.register("relu2")``) as a built-in
module does; everything it adds is attributed to it (``components.registry.registering_as``), so a group or value
that exists is refused with one line naming both sources.

Faults. A plugin named explicitly that fails to import stops the command (``PluginError``: one line naming the
module and its error). An installed entry point that fails to import is skipped with one warning line: an
environment holds many packages, and one broken plugin the run does not use should not stop every run there;
a run that names a group or value it would have provided then stops at that name, and the error line names the
broken plugin (``broken_note``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from dataclasses import dataclass

from components.registry import registering_as

GROUP = "blockbench.choices"
ENV = "BLOCKBENCH_PLUGINS"  # also ablations.plugin_args.ENV, which names it without importing torch


class PluginError(Exception):
    """A plugin that cannot be used: one line naming it and what went wrong."""


@dataclass(frozen=True)
class Plugin:
    """A loaded plugin: its name and version (the distribution's, or the module's for an uninstalled one), the
    module imported, and what it declared: its own groups and every (group, value) it registered."""

    name: str
    version: str
    module: str
    groups: tuple[str, ...]
    values: tuple[tuple[str, str], ...]

    @property
    def source(self) -> str:
        return f"plugin {self.name} ({self.module})"

    @property
    def pinned(self) -> str:
        """``name==version``, as rows record it."""
        return f"{self.name}=={self.version}"


_loaded: dict[str, Plugin] = {}  # by module
_broken: list[str] = []  # one line per installed entry point that failed to import
_started = False


def loaded() -> list[Plugin]:
    """The plugins imported so far, in load order."""
    return list(_loaded.values())


def broken_note() -> str:
    """What an error line adds while an installed plugin is skipped: it may be what the input named."""
    if not _broken:
        return ""
    return " (skipped, and perhaps what provides it: " + "; ".join(_broken) + ")"


def named_in_env() -> list[str]:
    return [m.strip() for m in os.environ.get(ENV, "").split(",") if m.strip()]


def load_plugins() -> None:
    """Import the installed entry points and ``$BLOCKBENCH_PLUGINS``'s modules, once per process.

    The guard is set first: a plugin's own import asks for ``choices()`` (``from components import FFNS``), which
    must not start loading again."""
    global _started
    if _started:
        return
    _started = True
    for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        dist = ep.dist
        name = dist.name if dist is not None else ep.name
        version = dist.version if dist is not None else "unknown"
        try:
            _import(ep.module, name, version)
        except PluginError as exc:
            line = f"installed plugin {name} (entry point {GROUP}: {ep.name} = {ep.value}): {exc}"
            _broken.append(line)
            print(f"blockbench: warning: {line}; skipped", file=sys.stderr)
    load_explicit(named_in_env())


def load_explicit(modules: list[str]) -> None:
    """Import modules named by ``plugins=`` (or ``$BLOCKBENCH_PLUGINS``); a failure is a ``PluginError``.

    Found on ``sys.path``, then in the working folder (which ``python -m`` puts on the path and the ``blockbench``
    script does not), so an uninstalled plugin beside the user works either way."""
    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for module in modules:
        if module not in _loaded:
            _import(module, *_name_and_version(module))


def _name_and_version(module: str) -> tuple[str, str]:
    """An uninstalled module is its own name; its version is the distribution's that ships its top package, if one
    does, else its ``__version__`` (read after import), else ``unversioned``."""
    top = module.split(".")[0]
    for dist in importlib.metadata.packages_distributions().get(top, []):
        return dist, importlib.metadata.version(dist)
    return module, ""


def _import(module: str, name: str, version: str) -> None:
    from components.choice import _DECLARED

    def values() -> set[tuple[str, str]]:
        return {(c.group, v) for c in _DECLARED.values() for v in c.registry.names()}

    groups_before, values_before = set(_DECLARED), values()
    source = f"plugin {name} ({module})"
    with registering_as(source):
        try:
            imported = importlib.import_module(module)
        except Exception as exc:
            # A skipped plugin leaves nothing half-declared behind.
            _forget(set(_DECLARED) - groups_before, values() - values_before)
            if isinstance(exc, ValueError):  # a duplicate (components.registry.DuplicateError), a refused declaration
                raise PluginError(f"{source}: {exc}") from None
            raise PluginError(f"plugin {module} failed to import: {type(exc).__name__}: {exc}") from None
    version = version or str(getattr(imported, "__version__", "unversioned"))
    _loaded[module] = Plugin(name, version, module, tuple(g for g in _DECLARED if g not in groups_before),
                             tuple(sorted(values() - values_before)))


def _forget(groups: set[str], values: set[tuple[str, str]]) -> None:
    from components.choice import _DECLARED, _SOURCES

    for group, value in values:
        if group in _DECLARED:
            _DECLARED[group].registry.forget(value)
    for group in groups:
        del _DECLARED[group], _SOURCES[group]


def shaping(values: dict[str, str]) -> list[Plugin]:
    """The loaded plugins that shape a point whose choice groups take ``values`` (group -> value): each that
    declared one of the groups at a value other than GPT-2's, or registered one of the values."""
    from components.choice import _DECLARED

    def moved(group: str) -> bool:
        return group in values and group in _DECLARED and values[group] != _DECLARED[group].gpt2

    # At GPT-2's value its own group builds what GPT-2's block builds: the point is the one it was without it.
    return [p for p in _loaded.values()
            if any(moved(g) for g in p.groups) or any(values.get(g) == v and moved(g) for g, v in p.values)]
