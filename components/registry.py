"""Name -> class registries, so a config names a variant and a new variant is one decorated class.

Every entry remembers who registered it (``source``): blockbench itself, or the plugin being imported
(``components.plugins`` sets it around each import), so a name registered twice is refused with one line naming
both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")

BUILT_IN = "blockbench"
# Who is registering now: blockbench's own modules, or ``plugin NAME (MODULE)`` while a plugin imports.
_source = BUILT_IN


def current_source() -> str:
    return _source


@contextmanager
def registering_as(source: str) -> Iterator[None]:
    """Attribute what is declared and registered inside to ``source`` (a plugin's import)."""
    global _source
    saved, _source = _source, source
    try:
        yield
    finally:
        _source = saved


class UnknownVariantError(ValueError):
    """A config named a variant that no module registered."""


class DuplicateError(ValueError):
    """A group or value declared where one of that name exists; the message names both sources."""


class Registry(Generic[T]):
    """Maps the names used in configs (``norm=rmsnorm``) to the classes that implement them."""

    def __init__(self, key: str) -> None:
        # ``key`` is the config key this registry serves (e.g. "norm.name"); errors quote it.
        self.key = key
        self._entries: dict[str, T] = {}
        self._sources: dict[str, str] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            if name in self._entries:
                raise DuplicateError(f"{self.key}={name} is registered twice: by {self._sources[name]} and by "
                                     f"{_source}")
            self._entries[name] = obj
            self._sources[name] = _source
            return obj

        return add

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` (``None`` for a value that builds nothing, e.g. ``qknorm=off``)."""
        self.register(name)(obj)

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownVariantError(
                f"{self.key}={name!r} is not a known variant; choose one of: {', '.join(self.names())}"
            ) from None

    def forget(self, name: str) -> None:
        """Undo a registration (a plugin whose import failed half-way, ``components.plugins``)."""
        del self._entries[name], self._sources[name]

    def source(self, name: str) -> str:
        """Who registered ``name``: ``blockbench`` or ``plugin NAME (MODULE)``."""
        return self._sources[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
