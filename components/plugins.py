"""Plugins: a user's package that declares choices with the API the built-ins use, found without editing blockbench.

Imported once per process at a command's start (``load_catalog``, which then freezes the catalog), else on the first
``choices()`` (or ``load_plugins``), after blockbench's own declarations:
an installed distribution's entry point in the group ``blockbench.choices``, or a module named by
``plugins=[pkg.mod,...]`` on any command (``ablations.config.command_start``), passed on in ``$BLOCKBENCH_PLUGINS`` to
the processes a command starts. What a plugin declares or registers is attributed to it
(``components.declared_set.registering_as``), so a duplicate is refused naming both sources; the plugins loaded are
recorded in the declared set's state (``components.declared_set.DECLARED``).

A plugin named explicitly that fails to import stops the command (``PluginError``, one line); a broken installed
entry point is skipped with one warning, and an error about a name it would have provided names it
(``broken_note``). Either way what it declared before it failed is taken back. Nothing here imports at call time
but a plugin's own module: the regression check runs this code while another tree's ``components`` is imported.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys

from components.declared_set import DECLARED, Plugin, registering_as

GROUP = "blockbench.choices"
ENV = "BLOCKBENCH_PLUGINS"  # also ablations.config.command_start.ENV, which names it without importing torch


class PluginError(Exception):
    """A plugin that cannot be used: one line naming it and what went wrong."""


def loaded() -> list[Plugin]:
    """The plugins imported so far, in load order."""
    return list(DECLARED.plugins.values())


def broken_note() -> str:
    """What an error line adds while an installed plugin is skipped: it may be what the input named."""
    if not DECLARED.broken:
        return ""
    return " (skipped, and perhaps what provides it: " + "; ".join(DECLARED.broken) + ")"


def named_in_env() -> list[str]:
    return [m.strip() for m in os.environ.get(ENV, "").split(",") if m.strip()]


def load_plugins() -> None:
    """Import the installed entry points and ``$BLOCKBENCH_PLUGINS``'s modules, once per process.

    The guard is set first: a plugin's own import lists the choices (``from blockbench import choice``), which must
    not start loading again."""
    if DECLARED.plugins_started:
        return
    DECLARED.plugins_started = True
    for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        dist = ep.dist
        name = dist.name if dist is not None else ep.name
        version = dist.version if dist is not None else "unknown"
        try:
            _import(ep.module, name, version)
        except PluginError as exc:
            line = f"installed plugin {name} (entry point {GROUP}: {ep.name} = {ep.value}): {exc}"
            DECLARED.broken.append(line)
            print(f"blockbench: warning: {line}; skipped", file=sys.stderr)
    load_explicit(named_in_env())


def load_catalog(modules: list[str]) -> None:
    """A command's one explicit point, before its own modules import: the installed plugins, then ``modules``, and the
    catalog frozen (``DeclaredSet.freeze``): from here every schema, point and row reads one set of choices, and only
    this loader adds to it (a plugin named later in the process). A process that starts elsewhere (a launcher's
    worker, a notebook) loads at its first ``choices()`` and is not frozen: a plugin importing itself directly may
    still be mid-declaration then."""
    load_plugins()
    load_explicit(modules)
    DECLARED.freeze()


def load_explicit(modules: list[str]) -> None:
    """Import modules named by ``plugins=`` (or ``$BLOCKBENCH_PLUGINS``); a failure is a ``PluginError``.

    Found on ``sys.path``, then in the working folder (which ``python -m`` puts on the path and the ``blockbench``
    script does not), so an uninstalled plugin beside the user works either way."""
    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for module in modules:
        if module not in DECLARED.plugins:
            _import(module, *_name_and_version(module))


def _name_and_version(module: str) -> tuple[str, str]:
    """An uninstalled module is its own name; its version is the distribution's that ships its top package, if one
    does, else its ``__version__`` (read after import), else ``unversioned``."""
    top = module.split(".")[0]
    for dist in importlib.metadata.packages_distributions().get(top, []):
        return dist, importlib.metadata.version(dist)
    return module, ""


def _import(module: str, name: str, version: str) -> None:
    before = DECLARED.mark()
    source = f"plugin {name} ({module})"
    with registering_as(source), DECLARED.unfrozen():  # the loader is the one door into a frozen catalog
        try:
            imported = importlib.import_module(module)
        except Exception as exc:
            DECLARED.back_to(before)  # a skipped plugin leaves nothing half-declared behind
            # A duplicate (components.declared_set.DuplicateError) or a refused declaration.
            if isinstance(exc, ValueError):
                raise PluginError(f"{source}: {exc}") from None
            raise PluginError(f"plugin {module} failed to import: {type(exc).__name__}: {exc}") from None
    after = DECLARED.mark()
    version = version or str(getattr(imported, "__version__", "unversioned"))
    groups = tuple(g for g in DECLARED.choices if g not in before.groups)
    DECLARED.plugins[module] = Plugin(name, version, module, groups, tuple(sorted(after.values - before.values)))


def shaping(values: dict[str, str]) -> list[Plugin]:
    """The loaded plugins that shape a point whose choice groups take ``values`` (group -> value): each that
    declared one of the groups at a value other than GPT-2's, or registered one of the values."""

    def moved(group: str) -> bool:
        return group in values and group in DECLARED.choices and values[group] != DECLARED.choices[group].gpt2

    # At GPT-2's value its own group builds what GPT-2's block builds: the point is the one it was without it.
    return [p for p in DECLARED.plugins.values()
            if any(moved(g) for g in p.groups) or any(values.get(g) == v and moved(g) for g, v in p.values)]
