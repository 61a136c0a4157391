"""Declarations that last one test: a choice group a consumer has never seen (``temporary_choice``), and
``kept()``, which takes back whatever a test declares, registers or loads as a plugin."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from blockbench import Choice, Registry, choices, declare
from components.declared_set import DECLARED


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
    with DECLARED.unfrozen():  # a test's group, declared after the plugins loaded and taken back on exit
        extra = declare(Choice(**{**spec, **fields}))
    try:
        yield extra
    finally:
        DECLARED.remove(extra.group)


@contextmanager
def kept() -> Iterator[None]:
    """Everything declared, registered, described and loaded as a plugin inside the block is taken back after it (a
    test that declares a group or imports a plugin for a while)."""
    mark = DECLARED.mark()
    plugins, broken, started = dict(DECLARED.plugins), list(DECLARED.broken), DECLARED.plugins_started
    try:
        with DECLARED.unfrozen():
            yield
    finally:
        DECLARED.back_to(mark)
        DECLARED.plugins, DECLARED.broken, DECLARED.plugins_started = plugins, broken, started
