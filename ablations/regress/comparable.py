"""Whether the base implements what a case asks for, so that its time means the same thing as the head's.

A base can build a case and still not run it: a base whose ``AttnConfig`` accepts a neutral ``window`` but does not
implement the sliding window times full attention for ``attn/mha-w64/*`` against the head's windowed attention, and
the difference would read as a regression. No hand list of such cases is kept; three checks read the two
trees themselves, first to fire names the reason, and the case is then ``not compared``:

1. **the base's declaration**: it declares the case's choice group, has the value in that group's registry, and
   declares every setting the case sets (``attn.window``) as a setting of the group (``Choice.setting_flips`` or
   ``llama2_settings``). A config field the base merely accepts is not a setting it implements.
2. **the configs**: each group's config as the base resolves it (its sizing included: GQA's KV heads) holds the
   same value as the head's in every field both configs have.
3. **the design built**: the parameters and the KV cache (elements) of the built case. They are properties of the
   design, unchanged by how the code computes it, so a head that fuses projections, renames a module or changes a
   kernel is still compared, while a base that silently builds another design (a full cache where the head keeps a
   window, MHA's K/V where the head has GQA's) is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields, is_dataclass
from types import ModuleType

from ablations.regress.architecture import split_overrides
from ablations.regress.tree_compat import CONFIG_CLASSES, declarations_of


def _declared_settings(decl: object) -> set[str]:
    """The settings a declaration names: every key of its setting flips and of the settings its Llama-2 value brings
    (a declaration without either field declares none)."""
    flips: Mapping[str, Mapping[str, object]] = getattr(decl, "setting_flips", {}) or {}
    return {key for settings in flips.values() for key in settings} | set(getattr(decl, "llama2_settings", {}) or {})


def declaration_gap(components: ModuleType, overrides: Mapping[str, object]) -> str | None:
    """Why the declarations of tree ``components`` do not cover a case's ``overrides`` (group values, dotted
    settings), or None."""
    groups, _ = split_overrides(overrides)
    declared = declarations_of(components)
    if not callable(getattr(declared, "choice", None)):  # a tree without declared choices: its config classes
        unknown = sorted(set(groups) - set(CONFIG_CLASSES))
        if unknown:
            return f"the base has no choice group {', '.join(unknown)}"
        settings = [f"{g}.{s}" for g, (_, given) in groups.items() for s in given]
        return f"the base declares no settings ({', '.join(settings)})" if settings else None
    for group, (value, settings) in groups.items():
        try:
            decl = declared.choice(group)
        except KeyError:
            return f"the base declares no choice group {group!r}"
        if value not in decl.values:
            return f"the base's {group} has no value {value!r} (it has {', '.join(decl.values)})"
        missing = sorted(set(settings) - _declared_settings(decl))
        if missing:
            accepted = {f.name for f in fields(decl.config)} if is_dataclass(decl.config) else set()
            how = ("its config accepts it but the declaration does not name it, so the base may ignore it"
                   if set(missing) <= accepted else "its config has no such field")
            return f"the base does not declare {', '.join(f'{group}.{s}' for s in missing)} as a setting ({how})"
    return None


def config_gap(base: object, head: object, groups: list[str]) -> str | None:
    """The first field, in any of ``groups``, that the two architectures both have and resolve differently."""
    for group in groups:
        b, h = getattr(base, group, None), getattr(head, group, None)
        if not (is_dataclass(b) and is_dataclass(h)):
            continue
        b_fields, h_fields = asdict(b), asdict(h)
        for key in b_fields.keys() & h_fields.keys():
            if b_fields[key] != h_fields[key]:
                return f"the base resolves {group}.{key}={b_fields[key]!r}, the head {h_fields[key]!r}"
    return None


def design_gap(base: Mapping[str, int], head: Mapping[str, int]) -> str | None:
    """The first part of the built design (``Subject.design``: parameters, KV cache) whose size differs."""
    for part in sorted(base.keys() | head.keys()):
        b, h = base.get(part, 0), head.get(part, 0)
        if b != h:
            return f"the base builds {b:,} elements of {part}, the head {h:,}: another design"
    return None
