"""The declared set's state, in one object: the choices declared so far and who declared each, and the plugins that
declared some of them.

``components.declarations`` declares into it and lists it; ``components.plugins`` loads plugins into it and takes
back what a plugin that failed half-way left. Nothing here imports at call time: the regression check runs this
code while another tree's ``components`` is imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar


class Declared(Protocol):
    """What the set reads of a declared choice (``components.choice.Choice``, which imports this module, so it is
    named here by this shape: no import cycle, type-only ones included)."""

    group: str
    hook: str
    order: int | None
    registry: Any  # components.registry.Registry, which imports this module too
    about: dict[str, str]
    display: dict[str, str]
    value_claims: dict[str, Any]

    @property
    def owns_hook(self) -> bool: ...


D = TypeVar("D", bound=Declared)


BUILT_IN = "blockbench"


class DuplicateError(ValueError):
    """A group or value declared where one of that name exists; the message names both sources."""


class FrozenError(ValueError):
    """A declaration, registration or description after the catalog froze (``DeclaredSet.freeze``): one line."""


# Why the catalog refuses: once the plugins load, every point, schema and row reads one set of choices.
FROZEN_RULE = ("the catalog froze when the plugins loaded; declare, register and describe in blockbench's components "
               "or in a plugin module (plugins=[pkg.mod], or the entry-point group blockbench.choices)")


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


@dataclass(frozen=True)
class Mark:
    """What was declared, registered and described at one moment, to take back whatever came after."""

    groups: frozenset[str]
    values: frozenset[tuple[str, str]]
    described: frozenset[tuple[str, str, str]]  # (group, table, value): ``about``, ``display``, ``value_claims``


@dataclass
class DeclaredSet:
    """The declared choices and the plugins loaded into them: one per process, ``DECLARED``."""

    choices: dict[str, Declared] = field(default_factory=dict)  # by group, in ``order``
    sources: dict[str, str] = field(default_factory=dict)  # who declared each group: ``blockbench`` or a plugin
    plugins: dict[str, Plugin] = field(default_factory=dict)  # the plugins imported, by module, in load order
    broken: list[str] = field(default_factory=list)  # one line per installed entry point that failed to import
    plugins_started: bool = False  # whether the plugins were imported (once per process)
    # Set once a command loads its plugins (``components.plugins.load_catalog``): only the plugin loader adds after it.
    frozen: bool = False
    # Who is declaring and registering now: blockbench's own modules, or ``plugin NAME (MODULE)`` while it imports.
    registering: str = BUILT_IN

    def add(self, choice: D) -> D:
        """``choice`` in the set, with its ``order`` filled in; a clash with a declared group is a ``DuplicateError``
        naming both sources, a declaration after the freeze a ``FrozenError``."""
        self.refuse_if_frozen(f"choice group {choice.group!r}")
        if choice.group in self.choices:
            raise DuplicateError(f"choice group {choice.group!r} is declared twice: by {self.sources[choice.group]} "
                                 f"and by {self.registering}")
        owner = next((other for other in self.choices.values() if other.hook == choice.hook and other.owns_hook), None)
        if owner is not None:
            raise DuplicateError(f"choice group {choice.group!r}: hook={choice.hook!r} is group {owner.group!r}'s (by "
                                 f"{self.sources[owner.group]}), whose one module the block builds; register a value "
                                 f"into its registry ({owner.registry.key}) instead")
        orders = {other.order: other.group for other in self.choices.values()}
        if choice.order is None:
            choice = replace(choice, order=max(orders, default=0) + 1)
        elif choice.order in orders:
            taken = orders[choice.order]
            raise DuplicateError(f"choice group {choice.group!r}: order={choice.order} is {taken!r}'s (by "
                                 f"{self.sources[taken]}); allowed: any other integer, or none (after every group)")
        self.choices[choice.group] = choice
        self.sources[choice.group] = self.registering
        ordered = sorted(self.choices.values(), key=lambda declared: declared.order)
        self.choices = {declared.group: declared for declared in ordered}
        return choice

    def freeze(self) -> None:
        """No more groups, values or descriptions but through the plugin loader (``unfrozen``)."""
        self.frozen = True

    def refuse_if_frozen(self, what: str) -> None:
        if self.frozen:
            raise FrozenError(f"{what}: {FROZEN_RULE}")

    @contextmanager
    def unfrozen(self) -> Iterator[None]:
        """Open the catalog for the block: the plugin loader importing a plugin named later in the process, and a
        test's temporary declarations (``tests.temporary_choice``)."""
        saved, self.frozen = self.frozen, False
        try:
            yield
        finally:
            self.frozen = saved

    def remove(self, group: str) -> None:
        """Take a group out of the set (what a plugin that failed half-way declared)."""
        del self.choices[group], self.sources[group]

    def mark(self) -> Mark:
        """What is declared, registered and described now."""
        declared = list(self.choices.values())
        return Mark(frozenset(self.choices),
                    frozenset((each.group, value) for each in declared for value in each.registry.names()),
                    frozenset(entry for each in declared for entry in _described(each)))

    def back_to(self, mark: Mark) -> None:
        """Take back every group declared, value registered and value described since ``mark``."""
        for declared in list(self.choices.values()):
            for value in declared.registry.names():
                if (declared.group, value) not in mark.values:
                    declared.registry.forget(value)
            for _, table, value in set(_described(declared)) - mark.described:
                del getattr(declared, table)[value]
            if declared.group not in mark.groups:
                self.remove(declared.group)


def _described(declared: Declared) -> Iterator[tuple[str, str, str]]:
    for table in ("about", "display", "value_claims"):
        yield from ((declared.group, table, value) for value in getattr(declared, table))


# The one declared set of this process (of each tree's ``components``, under the regression check).
DECLARED = DeclaredSet()


def current_source() -> str:
    """Who is declaring and registering now: ``blockbench``, or the plugin being imported."""
    return DECLARED.registering


@contextmanager
def registering_as(source: str) -> Iterator[None]:
    """Attribute what is declared and registered inside to ``source`` (a plugin's import)."""
    saved, DECLARED.registering = DECLARED.registering, source
    try:
        yield
    finally:
        DECLARED.registering = saved
