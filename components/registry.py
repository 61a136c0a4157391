"""Name -> class registries, so a config names a variant and a new variant is one decorated class.

Every entry remembers who registered it (``source``): blockbench itself, or the plugin being imported
(``components.plugins`` sets it around each import, in the declared set's state), so a name registered twice is
refused with one line naming both. What the harness reads off a registered class beyond its hook's methods is
declared once, in ``Traits``, each with the default a class that says nothing gets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar

from components.declared_set import DECLARED, DuplicateError, current_source

T = TypeVar("T")

@dataclass(frozen=True)
class Traits:
    """What consumers read off a value's class: a class sets any of these as a class attribute of the same name
    (``bounded_length = True``); one it does not set has the default here."""

    # positions: no position past ``model.max_seq_len`` (a learned table), so quality runs train at that length.
    bounded_length: bool = False
    # positions: a reference point, left out of the predictor's, sizes' and regression flips (NoPE). Read from the
    # class itself, not inherited: a value built on NoPE's class is not one.
    reference_only: bool = field(default=False, metadata={"inherited": False})
    # ffn: three matrices (SwiGLU), so ``cfg.ffn_hidden`` takes Llama's ≈ 8d/3 rule rather than 4d.
    gated: bool = False
    # branch: the branches whose output the module transforms (NormFormer's: attention's alone).
    branches: tuple[str, ...] = ("attn", "ffn")


def traits(cls: type | None) -> Traits:
    """The traits ``cls`` declares (``None``, a value that builds nothing, has the defaults)."""
    said: dict[str, Any] = {}
    for f in fields(Traits) if cls is not None else ():
        if f.metadata.get("inherited", True):
            if hasattr(cls, f.name):
                said[f.name] = getattr(cls, f.name)
        elif f.name in vars(cls):
            said[f.name] = vars(cls)[f.name]
    return Traits(**said)


class UnknownVariantError(ValueError):
    """A config named a variant that no module registered."""


class Registry(Generic[T]):
    """Maps the names used in configs (``norm=rmsnorm``) to the classes that implement them."""

    def __init__(self, key: str) -> None:
        # ``key`` is the config key this registry serves (e.g. "norm.name"); errors quote it.
        self.key = key
        self._entries: dict[str, T] = {}
        self._sources: dict[str, str] = {}
        # What every class must provide once the registry's group is declared on a hook (``bind``).
        self._check: Callable[[str, T], None] | None = None

    def bind(self, check: Callable[[str, T], None]) -> None:
        """Hold every value, those registered so far and those to come, to ``check(name, obj)``: the interface of
        the hook the registry's group was declared on (``components.declarations.declare``)."""
        for name, obj in self._entries.items():
            check(name, obj)
        self._check = check

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            if name in self._entries:
                raise DuplicateError(f"{self.key}={name} is registered twice: by {self._sources[name]} and by "
                                     f"{current_source()}")
            if self._check is not None:  # bound: its group is in the catalog
                DECLARED.refuse_if_frozen(f"{self.key}={name}")
                self._check(name, obj)
            self._entries[name] = obj
            self._sources[name] = current_source()
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

    def traits(self, name: str) -> Traits:
        """The traits of the class registered as ``name``."""
        return traits(self.get(name))

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
