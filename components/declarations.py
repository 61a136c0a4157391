"""The declared set of choices: declaring one, and listing them in ``order``.

blockbench's own declarations are imported once, with the ``components`` package (``import_built_ins``), so a
module that declares a group is found without being listed. The first ``choices()`` then imports the plugins
(``components.plugins``), which declare into the same set. The set's state is one object,
``components.declared_set.DECLARED``. Nothing here imports at call time but ``import_built_ins``, once, as the
package is imported: the regression check runs this code while another tree's ``components`` is imported.

Outside ``components`` these names are imported from ``blockbench``, the one path of the declaration API.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import replace
from typing import TYPE_CHECKING

from components.choice import LM_HOOKS, Arch, check_interface
from components.declared_set import DECLARED
from components.plugins import load_plugins

if TYPE_CHECKING:
    from torch import nn

    from components.choice import Choice


def declare(choice: Choice) -> Choice:
    """Add a choice to the declared set (called once, at import, by the module that implements it, or a plugin).

    A choice without an ``order`` goes after every group declared so far; the one returned has it. Every value of
    its registry, registered now or later, is held to its hook's interface (``choice.check_interface``)."""
    declared = DECLARED.add(choice)
    try:
        declared.registry.bind(functools.partial(check_interface, declared.hook, declared.registry.key))
    except Exception:
        DECLARED.remove(declared.group)
        raise
    return declared


def choices() -> list[Choice]:
    """Every declared choice, in ``order``: blockbench's own, then the installed plugins' and those named in
    ``$BLOCKBENCH_PLUGINS`` (imported on the first call)."""
    if not DECLARED.plugins_started:
        load_plugins()
    return list(DECLARED.choices.values())


def choice(group: str) -> Choice:
    listed = choices()
    for declared in listed:
        if declared.group == group:
            return declared
    raise KeyError(f"no choice group {group!r}; declared: {', '.join(each.group for each in listed)}")


def llama2_choices() -> list[Choice]:
    """The choices Llama-2 moved from GPT-2's value, in ``order``."""
    return [declared for declared in choices() if declared.in_llama2]


def ladder_choices() -> list[Choice]:
    """The Llama-2 choices in the order the ladder adds them."""
    return sorted(llama2_choices(), key=lambda declared: (declared.rung is None, declared.rung or 0, declared.order))


def hook_classes(arch: Arch, hook: str) -> list[type]:
    """The classes the choices plugged into ``hook`` use for ``arch`` (a value registered as None has none)."""
    out = []
    for declared in choices():
        if declared.hook == hook:
            cls = declared.registry.get(getattr(arch, declared.group).name)
            if cls is not None:
                out.append(cls)
    return out


def hook_modules(arch: Arch, hook: str) -> list[nn.Module]:
    """The modules the choices plugged into ``hook`` build for ``arch``, in declaration order."""
    return [cls(arch) for cls in hook_classes(arch, hook)]


def outside_the_decoder(arch: Arch, baseline: Arch) -> list[str]:
    """What sets ``arch`` apart from ``baseline`` where everything it moves lies outside the decoder (a group on an
    ``LM_HOOKS`` hook, the tied embeddings): ``["embed_scale=sqrt_d"]``; empty where the two decoders differ, or
    nothing differs. Their decoders are then the same block, so a timing of one against the other is an A/A."""
    moved = [declared for declared in choices() if getattr(arch, declared.group) != getattr(baseline, declared.group)]
    if any(declared.hook not in LM_HOOKS for declared in moved):
        return []
    if replace(arch.model, tie_embeddings=baseline.model.tie_embeddings) != baseline.model:
        return []
    said = [f"{declared.group}={getattr(arch, declared.group).name}" for declared in moved]
    if arch.model.tie_embeddings != baseline.model.tie_embeddings:
        said.append(f"model.tie_embeddings={str(arch.model.tie_embeddings).lower()}")
    return said


def import_built_ins(package: str, path: list[str]) -> None:
    """Import every module of blockbench's ``components`` package once, at its import, so that each choice
    declared beside its components is known without being listed anywhere."""
    for module in pkgutil.iter_modules(path):
        importlib.import_module(f"{package}.{module.name}")
