"""The declared set of choices, and its one owner: declaring, listing, and loading the plugins that declare more.

blockbench's own declarations are imported once, with the ``components`` package (``import_built_ins``), so a
module that declares a group is found without being listed. Plugins are imported once per process, on the first
``choices()`` (or ``load_plugins``), after blockbench's own: an installed distribution's entry point in the group
``blockbench.choices``, or a module named by ``plugins=[pkg.mod,...]`` on any command
(``ablations.config.plugin_args``), passed on in ``$BLOCKBENCH_PLUGINS`` to the processes a command starts. What a
plugin declares or registers is attributed to it (``components.registry.registering_as``), so a duplicate is refused
naming both sources.

A plugin named explicitly that fails to import stops the command (``PluginError``, one line); a broken installed
entry point is skipped with one warning, and an error about a name it would have provided names it
(``broken_note``). Either way what it declared before it failed is taken back. Nothing here imports at call time
but a plugin's own module: the regression check runs this code while another tree's ``components`` is imported.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from components.registry import DuplicateError, current_source, registering_as

if TYPE_CHECKING:
    from torch import nn

    from components.choice import Choice
    from components.config import ArchConfig

GROUP = "blockbench.choices"
ENV = "BLOCKBENCH_PLUGINS"  # also ablations.config.plugin_args.ENV, which names it without importing torch

_choices: dict[str, Choice] = {}  # by group, in ``order``
_sources: dict[str, str] = {}  # who declared each group: ``blockbench`` or ``plugin NAME (MODULE)``



def declare(choice: Choice) -> Choice:
    """Add a choice to the declared set (called once, at import, by the module that implements it, or a plugin).

    A choice without an ``order`` goes after every group declared so far; the one returned has it."""
    if choice.group in _choices:
        raise DuplicateError(f"choice group {choice.group!r} is declared twice: by {_sources[choice.group]} and by "
                             f"{current_source()}")
    owner = next((c for c in _choices.values() if c.hook == choice.hook and c.owns_hook), None)
    if owner is not None:
        raise DuplicateError(f"choice group {choice.group!r}: hook={choice.hook!r} is group {owner.group!r}'s (by "
                             f"{_sources[owner.group]}), whose one module the block builds; register a value into "
                             f"its registry ({owner.registry.key}) instead")
    orders = {c.order: c.group for c in _choices.values()}
    if choice.order is None:
        choice = replace(choice, order=max(orders, default=0) + 1)
    elif choice.order in orders:
        taken = orders[choice.order]
        raise DuplicateError(f"choice group {choice.group!r}: order={choice.order} is {taken!r}'s (by "
                             f"{_sources[taken]}); allowed: any other integer, or none (after every group)")
    _choices[choice.group] = choice
    _sources[choice.group] = current_source()
    _sort()
    return choice


def undeclare(group: str) -> None:
    """Take a group out of the declared set (a plugin that failed half-way; a group declared for a test)."""
    del _choices[group], _sources[group]


def _sort() -> None:
    ordered = sorted(_choices.values(), key=lambda c: c.order)
    _choices.clear()
    _choices.update((c.group, c) for c in ordered)


def declared_by(group: str) -> str:
    """Who declared ``group``: ``blockbench`` or ``plugin NAME (MODULE)``."""
    return _sources[group]


def choices() -> list[Choice]:
    """Every declared choice, in ``order``: blockbench's own, then the installed plugins' and those named in
    ``$BLOCKBENCH_PLUGINS`` (imported on the first call)."""
    if not _plugins_started:
        load_plugins()
    return list(_choices.values())


def choice(group: str) -> Choice:
    listed = choices()
    for c in listed:
        if c.group == group:
            return c
    raise KeyError(f"no choice group {group!r}; declared: {', '.join(c.group for c in listed)}")


def llama2_choices() -> list[Choice]:
    """The choices Llama-2 moved from GPT-2's value, in ``order``."""
    return [c for c in choices() if c.in_llama2]


def ladder_choices() -> list[Choice]:
    """The Llama-2 choices in the order the ladder adds them."""
    return sorted(llama2_choices(), key=lambda c: (c.rung is None, c.rung or 0, c.order))


def hook_classes(cfg: ArchConfig, hook: str) -> list[type]:
    """The classes the choices plugged into ``hook`` use for ``cfg`` (a value registered as None has none)."""
    out = []
    for c in choices():
        if c.hook == hook:
            cls = c.registry.get(getattr(cfg, c.group).name)
            if cls is not None:
                out.append(cls)
    return out


def hook_modules(cfg: ArchConfig, hook: str) -> list[nn.Module]:
    """The modules the choices plugged into ``hook`` build for ``cfg``, in declaration order."""
    return [cls(cfg) for cls in hook_classes(cfg, hook)]


def import_built_ins(package: str, path: list[str]) -> None:
    """Import every module of blockbench's ``components`` package once, at its import, so that each choice
    declared beside its components is known without being listed anywhere."""
    for module in pkgutil.iter_modules(path):
        importlib.import_module(f"{package}.{module.name}")



@dataclass(frozen=True)
class _Mark:
    """What was declared, registered and described at one moment, to take back whatever came after."""

    groups: frozenset[str]
    values: frozenset[tuple[str, str]]
    described: frozenset[tuple[str, str, str]]  # (group, table, value): ``about``, ``display``, ``value_claims``


def _described(c: Choice) -> Iterator[tuple[str, str, str]]:
    for table in ("about", "display", "value_claims"):
        yield from ((c.group, table, v) for v in getattr(c, table))


def _mark() -> _Mark:
    return _Mark(frozenset(_choices), frozenset((c.group, v) for c in _choices.values() for v in c.registry.names()),
                 frozenset(d for c in _choices.values() for d in _described(c)))


def _back_to(mark: _Mark) -> None:
    for c in list(_choices.values()):
        for value in c.registry.names():
            if (c.group, value) not in mark.values:
                c.registry.forget(value)
        for _, table, value in set(_described(c)) - mark.described:
            del getattr(c, table)[value]
        if c.group not in mark.groups:
            undeclare(c.group)


@contextmanager
def kept() -> Iterator[None]:
    """Everything declared, registered, described and loaded inside the block is taken back after it (a test that
    declares a group or imports a plugin for a while)."""
    mark, loaded, broken, started = _mark(), dict(_loaded), list(_broken), _plugins_started
    try:
        yield
    finally:
        _back_to(mark)
        _loaded.clear()
        _loaded.update(loaded)
        _broken[:] = broken
        _set_started(started)



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
    def pinned(self) -> str:  # as rows record it
        return f"{self.name}=={self.version}"


_loaded: dict[str, Plugin] = {}  # by module
_broken: list[str] = []  # one line per installed entry point that failed to import
_plugins_started = False


def _set_started(started: bool) -> None:
    global _plugins_started
    _plugins_started = started


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

    The guard is set first: a plugin's own import lists the choices (``from blockbench import choice``), which must
    not start loading again."""
    if _plugins_started:
        return
    _set_started(True)
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
    before = _mark()
    source = f"plugin {name} ({module})"
    with registering_as(source):
        try:
            imported = importlib.import_module(module)
        except Exception as exc:
            _back_to(before)  # a skipped plugin leaves nothing half-declared behind
            if isinstance(exc, ValueError):  # a duplicate (components.registry.DuplicateError), a refused declaration
                raise PluginError(f"{source}: {exc}") from None
            raise PluginError(f"plugin {module} failed to import: {type(exc).__name__}: {exc}") from None
    after = _mark()
    version = version or str(getattr(imported, "__version__", "unversioned"))
    _loaded[module] = Plugin(name, version, module, tuple(g for g in _choices if g not in before.groups),
                             tuple(sorted(after.values - before.values)))


def shaping(values: dict[str, str]) -> list[Plugin]:
    """The loaded plugins that shape a point whose choice groups take ``values`` (group -> value): each that
    declared one of the groups at a value other than GPT-2's, or registered one of the values."""

    def moved(group: str) -> bool:
        return group in values and group in _choices and values[group] != _choices[group].gpt2

    # At GPT-2's value its own group builds what GPT-2's block builds: the point is the one it was without it.
    return [p for p in _loaded.values()
            if any(moved(g) for g in p.groups) or any(values.get(g) == v and moved(g) for g, v in p.values)]
