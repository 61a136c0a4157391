"""Name -> class registries, so a config names a variant and a new variant is one decorated class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownVariantError(ValueError):
    """A config named a variant that no module registered."""


class Registry(Generic[T]):
    """Maps the names used in configs (``norm=rmsnorm``) to the classes that implement them."""

    def __init__(self, key: str) -> None:
        # ``key`` is the config key this registry serves (e.g. "norm.name"); errors quote it.
        self.key = key
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.key}: variant {name!r} is registered twice")
            self._entries[name] = obj
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

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
