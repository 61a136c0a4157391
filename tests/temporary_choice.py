"""A choice group declared for the length of a test, to show that a consumer takes up a group it has never seen."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from components import Choice, choices, declarations
from components.registry import Registry


@dataclass
class ExtraConfig:
    name: str = "off"


@contextmanager
def temporary_choice(**fields: Any) -> Iterator[Choice]:
    """``extra=off|on``: declared after every other group, neither model's (``off`` for both unless ``fields`` say
    otherwise), building nothing (a ``flag`` no layer reads), so any architecture takes it; undeclared on exit."""
    registry: Registry[None] = Registry("extra.name")
    registry.add("off", None)
    registry.add("on", None)
    spec = dict(group="extra", config=ExtraConfig, registry=registry, gpt2="off", llama2="off", hook="flag",
                order=max(choice.order for choice in choices()) + 1, title="extra thing",
                about={"off": "no extra thing", "on": "the extra thing, switched on"})
    extra = declarations.declare(Choice(**{**spec, **fields}))
    try:
        yield extra
    finally:
        declarations.undeclare(extra.group)
