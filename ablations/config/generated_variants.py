"""The variants generated from the declared choices, each stored as ``variant/<name>`` (``ablations.config.generated``).

GPT-2 (``gpt2``), each value flipped alone on it (``rmsnorm``, ``gqa``, ``nobias``, ``none``, ...), Llama-2's block
(``llama2``: every choice Llama-2 moved, untied embeddings), each of those reverted alone (``llama2_gelu``,
``llama2_bias``, ...), Llama-2's block with tied embeddings (``llama2_tied``), GPT-2's block with Llama-2's untied
embeddings (``untied``), the ladder's cumulative rungs
(``rope_rmsnorm``, ...) and each choice that came after Llama-2 alone on its block (``llama2_alibi``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blockbench import Choice, choices, ladder_choices, llama2_choices
from components import LLAMA2_TIES_EMBEDDINGS, ModelConfig, embeddings_text, llama2_values
from components.baselines import BASELINES

# The variants named as the blocks a point is paired with.
BASELINE, LLAMA2 = BASELINES
# Llama-2's block with GPT-2's embeddings, and GPT-2's block with Llama-2's: the embeddings are the sixth thing
# Llama-2's quality model changes, so each side of it is an arm of its own.
TIED = "llama2_tied"
UNTIED = "untied"


@dataclass(frozen=True)
class Variant:
    """A named point: group overrides on the GPT-2 baseline plus plain settings."""

    name: str
    values: dict[str, str]
    settings: dict[str, Any] = field(default_factory=dict)
    what: str = ""

    def node(self) -> dict[str, Any]:
        defaults = [{f"override /{group}": value} for group, value in self.values.items()]
        return {"defaults": defaults, **self.settings} if defaults else dict(self.settings)


def flip_name(choice: Choice, value: str) -> str:
    return choice.value_name(value)


def flips() -> list[Variant]:
    """Every value other than GPT-2's, alone on the GPT-2 block, named as its choice names it."""
    return [Variant(flip_name(choice, v), {choice.group: v}, what=f"the GPT-2 block with {choice.group}={v}")
            for choice in choices() for v in choice.values if v != choice.gpt2]


def embeddings_flip() -> Variant:
    """GPT-2's block with Llama-2's embeddings alone (``LLAMA2_TIES_EMBEDDINGS``): what untying buys by itself."""
    return Variant(UNTIED, {}, {"model": {"tie_embeddings": LLAMA2_TIES_EMBEDDINGS}},
                   f"the GPT-2 block with Llama-2's {embeddings_text(LLAMA2_TIES_EMBEDDINGS)}")


def llama2_variant(revert: Choice | None = None, tied: bool = False) -> Variant:
    values = {g: v for g, v in llama2_values().items() if revert is None or g != revert.group}
    # Llama-2's embeddings (``components.presets.LLAMA2_TIES_EMBEDDINGS``), set beside its choices; tied: GPT-2's.
    settings = {} if tied else {"model": {"tie_embeddings": LLAMA2_TIES_EMBEDDINGS}}
    if revert is not None:
        return Variant(f"{LLAMA2}_{flip_name(revert, revert.gpt2)}", values, settings,
                       f"the Llama-2 block with {revert.group} reverted to GPT-2's {revert.gpt2}")
    if tied:
        return Variant(TIED, values, settings,
                       f"the Llama-2 block with GPT-2's {embeddings_text(ModelConfig.tie_embeddings)}")
    return Variant(LLAMA2, values, settings,
                   f"Llama-2's block: every choice Llama-2 moved, {embeddings_text(LLAMA2_TIES_EMBEDDINGS)}")


def leave_one_out() -> list[Variant]:
    reverted = (llama2_variant(revert=choice) for choice in llama2_choices())
    return [llama2_variant(), *reverted, llama2_variant(tied=True)]


def ladder() -> list[Variant]:
    """GPT-2, then the Llama-2 choices added one at a time in ``rung`` order, then Llama-2's block (whose last step
    also unties the embeddings). A rung is named by its choices in declaration order: ``rope_rmsnorm``."""
    rungs = ladder_choices()
    out = [Variant(BASELINE, {}, what="the GPT-2 block: every choice at GPT-2's value")]
    for k in range(1, len(rungs)):
        added = sorted(rungs[:k], key=lambda choice: choice.order)
        values = {choice.group: choice.llama2 for choice in added}
        out.append(Variant("_".join(flip_name(choice, choice.llama2) for choice in added), values,
                           what="the ladder's rung with " + ", ".join(f"{g}={v}" for g, v in values.items())))
    return [*out, llama2_variant()]


def modern() -> list[Variant]:
    """Llama-2's block, then each choice that came after it alone on it: every flip that is neither GPT-2's nor
    Llama-2's value (``Choice.after_llama2``), and every named setting flip (``Choice.setting_flips``)."""
    base = llama2_variant()
    out = [base]
    for choice in choices():
        for v in choice.after_llama2:
            out.append(Variant(f"{LLAMA2}_{flip_name(choice, v)}", {**base.values, choice.group: v}, base.settings,
                               f"the Llama-2 block with {choice.group}={v}"))
        for name, settings in choice.setting_flips.items():
            said = ", ".join(f"{choice.group}.{k}={v}" for k, v in settings.items())
            out.append(Variant(f"{LLAMA2}_{name}", base.values, {**base.settings, choice.group: dict(settings)},
                               f"the Llama-2 block with {said}"))
    return out


def all_variants() -> list[Variant]:
    """Every generated variant once (the ladder's first rung is also a flip)."""
    seen: dict[str, Variant] = {}
    for v in [*ladder(), *flips(), embeddings_flip(), *leave_one_out(), *modern()]:
        seen.setdefault(v.name, v)
    return list(seen.values())
