"""What the regression check times: each component variant, and the timed block under each sweep's variants.

A case is built from one tree's ``components`` module (``ablations.regress.builders``), so the base and the head
each run their own code on the same shapes (``ablations.measure.shapes``), seed and inputs; every case also says how
to renew its state between rounds (``ablations.regress.subjects``).
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from ablations.config.columns import name_in
from ablations.measure.shapes import (
    ATTN_SHAPE,
    BLOCK_SHAPE,
    D_MODEL,
    DECODE_SHAPE,
    FFN_SHAPE,
    GQA_KV_HEADS,
    N_HEADS,
    NORM_SHAPE,
    POS_SHAPE,
)
from ablations.regress.architecture import split_overrides
from ablations.regress.builders import attn_case, block_case, ffn_case, norm_case, pos_case, pos_timed
from ablations.regress.subjects import Subject
from blockbench import Choice, choice, choices
from components import ArchConfig, ModelConfig, llama2_values

MODES = ("forward", "train", "decode")


def _values(declared: Choice) -> list[dict[str, object]]:
    """Each value of the choice ``declared`` other than GPT-2's, as overrides (GQA at each of ``GQA_KV_HEADS``), then
    each of its setting flips on GPT-2's value (``{"attn": "mha", "attn.window": 64}``)."""
    out: list[dict[str, object]] = []
    for value in declared.values[1:]:
        # A value the declaration sizes by its KV heads (GQA): one case per KV-head count.
        if declared.at_size(value, GQA_KV_HEADS[0]) != declared.at(value):
            out += [{declared.group: value, "kv": kv} for kv in GQA_KV_HEADS]
        else:
            out.append({declared.group: value})
    for settings in declared.setting_flips.values():
        out.append({declared.group: declared.gpt2, **{f"{declared.group}.{k}": v for k, v in settings.items()}})
    return out


def _name(overrides: dict[str, object]) -> str:
    """The case's variant name, as a sweep point's label names it (``rmsnorm``, ``gqa2``, ``nobias``, ``mha-w64``)."""
    groups, kv = split_overrides(overrides)
    configs = {g: choice(g).at_size(v, kv, **s) for g, (v, s) in groups.items()}
    a = ArchConfig(model=ModelConfig(d_model=D_MODEL, n_layers=1, n_heads=N_HEADS), **configs)
    return "+".join(name_in(choice(g), a) for g in groups)


def block_variants() -> dict[str, dict[str, object]]:
    """The block's variants: GPT-2's, every other value of every declared choice alone (the values each sweep
    takes), and Llama-2's block (GQA at 2 KV heads); derived from the declarations, so a new choice is timed."""
    out: dict[str, dict[str, object]] = {"gpt2": {}}
    for declared in choices():
        out.update({_name(o): o for o in _values(declared)})
    out["llama2"] = {**llama2_values(), "kv": GQA_KV_HEADS[-1]}
    return out


def attn_variants() -> dict[str, dict[str, object]]:
    """Attention alone: MHA, GQA at the smallest ``GQA_KV_HEADS``, and every other attention value."""
    attn = choice("attn")
    out: dict[str, dict[str, object]] = {attn.gpt2: {}}
    for o in _values(attn):
        if o.get("kv") in (None, GQA_KV_HEADS[-1]):
            out[_name(o)] = o
    return out


# A few cases that cover an op of each kind and the block in every mode: what CI runs on every commit.
CI_CASES = ("norm/rmsnorm/forward", "norm/layernorm/train", "attn/gqa2/decode", "block/gpt2/forward",
            "block/llama2/train", "block/llama2/decode")
CASE_SETS = ("default", "ci")


@dataclass(frozen=True)
class Case:
    component: str  # norm, ffn, pos, attn, block
    variant: str
    mode: str  # forward, train, decode
    build: Callable[[ModuleType], Subject]
    shape: tuple[int, ...]
    # The choices and settings the case sets (``{"attn": "mha", "attn.window": 64}``), as ``arch`` takes them.
    overrides: Mapping[str, object] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.component}/{self.variant}/{self.mode}"

    @property
    def counted(self) -> bool:
        """Also counted in instructions under callgrind: the norms' and positions' forward and attention's decode
        step, the calls of a few MFLOP. Matrix products run far too slowly under valgrind to count, so cases made of
        them are timed only."""
        return (self.component in ("norm", "pos") and self.mode == "forward") or (
            self.component == "attn" and self.mode == "decode")


def all_cases() -> list[Case]:
    """The default case set, in a stable order: components first, then the block."""
    cases = []
    for name, mode in itertools.product(choice("norm").values, MODES[:2]):
        cases.append(Case("norm", name, mode, norm_case(name, mode), NORM_SHAPE, {"norm": name}))
    for name, mode in itertools.product(choice("ffn").values, MODES[:2]):
        cases.append(Case("ffn", name, mode, ffn_case(name, mode), (*FFN_SHAPE, D_MODEL), {"ffn": name}))
    for name, mode in itertools.product([v for v in choice("pos").values if pos_timed(v)], MODES[:2]):
        cases.append(Case("pos", name, mode, pos_case(name, mode), (*POS_SHAPE, D_MODEL), {"pos": name}))
    for (name, overrides), mode in itertools.product(attn_variants().items(), MODES):
        shape = (*DECODE_SHAPE, D_MODEL) if mode == "decode" else (*ATTN_SHAPE, D_MODEL)
        cases.append(Case("attn", name, mode, attn_case(overrides, mode), shape, overrides))
    for (name, overrides), mode in itertools.product(block_variants().items(), MODES):
        shape = (*DECODE_SHAPE, D_MODEL) if mode == "decode" else (*BLOCK_SHAPE, D_MODEL)
        cases.append(Case("block", name, mode, block_case(overrides, mode), shape, overrides))
    return cases


def matches(name: str, pattern: str) -> bool:
    """Whether case ``name`` (``component/variant/mode``) has ``pattern``'s segments as a run of its own: the pattern
    split on ``/`` (a leading or trailing ``/`` only marks a whole segment) must match that many consecutive segments
    of the name, each a glob within one segment (``*``, ``?``, ``[...]`` never cross a ``/``). So ``norm`` and
    ``norm/`` select ``norm/*/*`` and never ``block/qknorm/*``, ``block/gpt2`` selects ``block/gpt2/*``,
    ``block/*/forward`` every block's forward, ``forward`` every forward and ``*norm*`` every name with a segment
    containing ``norm``."""
    stripped = pattern.strip("/")
    if not stripped:
        return False
    parts, segments = stripped.split("/"), name.split("/")
    return any(all(fnmatch.fnmatchcase(s, p) for s, p in zip(segments[i:i + len(parts)], parts, strict=True))
               for i in range(len(segments) - len(parts) + 1))


def select(case_set: str = "default", patterns: Sequence[str] = ()) -> list[Case]:
    """The cases of ``case_set`` whose name matches any pattern in whole path segments (``matches``)."""
    cases = all_cases()
    if case_set == "ci":
        cases = [case for case in cases if case.name in CI_CASES]
    if patterns:
        cases = [case for case in cases if any(matches(case.name, p) for p in patterns)]
    return cases


def by_name(names: Sequence[str]) -> list[Case]:
    """The cases named, in the order given (what the callgrind worker counts)."""
    index = {case.name: case for case in all_cases()}
    return [index[n] for n in names]
