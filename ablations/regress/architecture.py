"""A case's overrides (``{"attn": "mha", "attn.window": 64, "kv": 2}``) read as choice groups, and the one-layer
architecture they give in a tree's own classes."""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType

from ablations.measure.shapes import MODEL_SIZES
from ablations.regress.tree_compat import declarations_of, undeclared_arch


def split_overrides(overrides: Mapping[str, object]) -> tuple[dict[str, tuple[str, dict[str, object]]], int]:
    """Overrides as ``{group: (value, settings)}`` and the KV heads (0: none given): a dotted key is a setting of its
    group (``attn.window``), the way Hydra spells it; ``kv`` sizes GQA."""
    groups: dict[str, tuple[str, dict[str, object]]] = {}
    for key, value in overrides.items():
        if key != "kv" and "." not in key:
            groups[key] = (str(value), {})
    for key, value in overrides.items():
        group, dot, setting = key.partition(".")
        if dot:
            groups[group][1][setting] = value
    return groups, int(overrides.get("kv") or 0)


def arch(components: ModuleType, kv: int | None = None, **values: object) -> object:
    """One block with the given choices at the given values (GPT-2's for the rest; a dotted key is a setting,
    ``attn.window``), from the classes of tree ``components``. A tree that lacks a group or a setting raises, and
    the regression check then leaves the case ``not compared`` (as it does one whose declaration lacks the setting:
    ``ablations.regress.comparable``)."""
    declared = declarations_of(components)
    if not callable(getattr(declared, "choice", None)):
        return undeclared_arch(components, kv, **values)
    split, _ = split_overrides(values)
    groups = {g: declared.choice(g).at_size(v, kv or 0, **s) for g, (v, s) in split.items()}
    return components.ArchConfig(model=components.ModelConfig(**MODEL_SIZES), **groups)
