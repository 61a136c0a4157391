"""A design choice, declared once: its config group, its values and what implements each, the value GPT-2 and
Llama-2 take, where its module plugs into the block, what each value is, and the published claim with the evidence
it is read from.

Every consumer derives from these declarations: ``ArchConfig``'s fields and checks, the Hydra schema and its
generated variants and sweeps, row columns and point identity, variant labels, the predictor's and sizes' flips,
the regression and benchmark cases, the report's tables and claims, and ``--help``. A declaration sits beside its
components (``norms.py`` declares ``norm``) and joins the declared set (``components.declarations``) when its
module is imported; ``docs/choices.md`` ("Adding a choice") counts what a new group is made of.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from torch import nn

from components.declared_set import DECLARED, DuplicateError, current_source
from components.registry import Registry


class Arch(Protocol):
    """What a choice reads off an architecture: each declared group's config by name (``arch.norm``). The one
    implementation, ``components.config.ArchConfig``, is built from the declared choices, so this module names it
    by this shape rather than import it (no import cycle, type-only ones included)."""

    def __getattr__(self, group: str) -> Any: ...


@dataclass(frozen=True)
class Interface:
    """What the harness calls by name on a class registered on a hook, checked when the class is registered
    (``check_interface``), so a class that lacks one fails there in one line, not mid-run. How each is built and
    called is docs/plugins.md's ("What each hook's class provides"); tests/components/test_hooks.py holds that table to
    these names and methods."""

    methods: tuple[str, ...] = ("forward",)  # defined by the class itself, not left to ``nn.Module``'s placeholder
    module: bool = True  # built and held by the model: an ``nn.Module``
    work: bool = False  # states what one call costs (``work``)
    nothing: bool = False  # builds nothing: every value is registered as None


# Where a choice's module plugs in, and what it is called by. The block and attention ask for the modules of a hook
# (``components.declarations.hook_modules``) and never branch on a choice's name; a hook no declared choice fills at
# a point's values costs nothing (the same modules, init draws and code paths as without it).
INTERFACES = {
    "pos": Interface(methods=("embed", "rotation", "score_bias"), work=True),
    "norm": Interface(work=True),
    "ffn": Interface(work=True),
    "attn": Interface(work=True),
    "qkv": Interface(work=True),
    "qk": Interface(work=True),
    "scores": Interface(work=True),
    "branch": Interface(work=True),
    "block": Interface(methods=("norms", "forward"), module=False, work=True),
    "embedding": Interface(),
    "logits": Interface(),
    "init": Interface(methods=("__call__",), module=False),
    "flag": Interface(methods=(), module=False, nothing=True),
}
HOOKS = tuple(INTERFACES)
# The hooks whose module is one group's value: a second group there would never be built, so it is refused.
OWNED_HOOKS = ("pos", "norm", "ffn", "attn")
# The hooks on the language model around the decoder: the timed unit (``Decoder``) never builds their modules.
LM_HOOKS = ("embedding", "logits")
CONTRACT = 'docs/plugins.md, "What each hook\'s class provides"'


class InterfaceError(TypeError):
    """A value registered on a hook with a class that lacks what the hook calls; the message is one line."""


def _defines(cls: type, name: str) -> bool:
    return any(name in vars(k) for k in cls.__mro__ if k not in (object, nn.Module))


def check_interface(hook: str, key: str, value: str, obj: object) -> None:
    """Raise ``InterfaceError`` naming ``key=value`` where ``obj`` is not what ``hook`` calls (``INTERFACES``)."""
    need = INTERFACES[hook]
    where = f"{key}={value}: the {hook} hook"
    if obj is None:
        if hook in OWNED_HOOKS:
            raise InterfaceError(f"{where} builds its group's one module, so every value needs a class, not None "
                                 f"({CONTRACT})")
        return
    if need.nothing:
        raise InterfaceError(f"{where} builds nothing: register every value as None, e.g. REGISTRY.add({value!r}, "
                             f"None), and read arch.<group> where it matters ({CONTRACT})")
    if not isinstance(obj, type):
        raise InterfaceError(f"{where} takes a class, got {type(obj).__name__} {obj!r} ({CONTRACT})")
    if need.module and not issubclass(obj, nn.Module):
        raise InterfaceError(f"{where} builds a module: {obj.__name__} must subclass torch.nn.Module ({CONTRACT})")
    missing = [m for m in (*need.methods, *(("work",) if need.work else ())) if not _defines(obj, m)]
    if missing:
        raise InterfaceError(f"{where} calls {', '.join(missing)}, which {obj.__name__} does not define ({CONTRACT})")


# What in a run's results a claim is read from; the report has one reading per name (``ablations.report.claims``):
# - ``flip``: the flip's parameters, forward, train and decode time and its loss against the block it was paired
#   with (the default);
# - ``speed``: its forward and train time, then its loss (a claim of lower cost);
# - ``per_flop``: its loss at its FLOPs against GPT-2's value (a claim of quality per FLOP);
# - ``extrapolation``: loss by evaluation length past the training length (a position scheme's claim);
# - ``kv_cache``: KV-cache bytes at full size and decode time against MHA (attention's claim);
# - ``stability``: as ``flip``, then whether any quality run diverged (a claim about training stability).
EVIDENCE = ("flip", "speed", "per_flop", "extrapolation", "kv_cache", "stability")


@dataclass(frozen=True)
class Claim:
    """What the literature says a choice buys, the published figures behind it (not measured here), and what in
    this run's results it is read from."""

    text: str
    # (source, figure) pairs, each quoted from the paper or the arithmetic named.
    published: tuple[tuple[str, str], ...] = ()
    # What the cited sources say of the loss at equal training: "better", "no worse", or None where they say nothing
    # of it (the report says whether this run agrees: ablations.report.buys).
    loss: str | None = None
    # Which of ``EVIDENCE`` the report reads it from.
    evidence: str = "flip"
    # What a loss verdict is held against: "performs as well as LayerNorm" (default: as well as without it).
    performs: str | None = None
    # Said after the cost reading, ``{params}`` being the parameters the flip changed.
    why: str = ""
    # The sweep whose rows the evidence is read from first (default: the group's own, ``+sweep=<group>``): a group
    # whose sweep is a file of another name says it (attention's KV-cache claim: ``kv``, over KV heads).
    sweep: str = ""

    def __post_init__(self) -> None:
        if self.evidence not in EVIDENCE:
            raise ValueError(f"claim {self.text!r}: evidence={self.evidence!r} is not one of {', '.join(EVIDENCE)}")


@dataclass(frozen=True, kw_only=True)
class Choice:
    """One design choice group, by keyword.

    Every declaration says ``group``, ``config`` (its dataclass: the Hydra schema of ``conf/<group>/``, whose
    ``name`` defaults to GPT-2's value), ``registry`` (a class per value), ``hook`` and ``about``; the rest have
    defaults. ``gpt2`` is the config's default name; ``llama2`` defaults to it: a choice neither model has
    (QK-norm), which joins no Llama-2 variant and moves no existing point's identity.
    """

    group: str
    config: type
    registry: Registry
    # Where its modules plug in: one of ``HOOKS``.
    hook: str
    # What each value, and each of ``setting_flips``, is: one cell of the docs' and the README's choice tables
    # (``ablations.config.doc_text`` renders them; ``tests/test_declarations.py`` fails on a value without one).
    about: dict[str, str] = field(default_factory=dict)
    gpt2: str = ""
    llama2: str = ""
    claim: Claim | None = None
    # Claims about a value other than Llama-2's (GeGLU against SwiGLU), each read from that value's flip.
    value_claims: dict[str, Claim] = field(default_factory=dict)
    # How the report's tables and the docs title the group (default: its name).
    title: str = ""
    # How prose and tables spell each value, or each of ``setting_flips`` ("RMSNorm", "sliding window"); a value
    # not listed is its own name.
    display: dict[str, str] = field(default_factory=dict)
    # What a variant's name calls each value; a value not listed is its own name, except that a switch's ``on``
    # and ``off`` are the group's name and ``no`` + it (``bias``: "bias", "nobias"; ``qknorm``: "qknorm").
    names: dict[str, str] = field(default_factory=dict)
    # Position in labels, tables and column order (none: after every group declared before it); the ladder adds the
    # choices GPT-2 and Llama-2 differ in by ``rung``.
    order: int | None = None
    rung: int | None = None
    # Whether an architecture has this choice at a value; default: the group's ``name`` equals it. Attention
    # overrides it because ``gqa`` with every head its own KV head is MHA.
    matches: Callable[[Arch, str], bool] | None = None
    # The values the predictor, the sizes table and the regression check flip GPT-2's block to (default: every
    # value but GPT-2's, less those whose class says ``reference_only``, as NoPE's does: ``registry.Traits``).
    flip_values: tuple[str, ...] | None = None
    # Fills the settings a value needs at a model size (attention: GQA's KV heads); default: none needed.
    sized: Callable[[Any, int], Any] | None = None
    # Named settings of this group that ``+sweep=modern`` flips on Llama-2's block as it flips a value (attention's
    # sliding window: ``{"window": {"window": 64}}`` makes the variant ``llama2_window``).
    setting_flips: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A one-choice sweep (``+sweep=<group>``) over every value is generated unless the group sweeps otherwise.
    sweep: bool = True

    def __post_init__(self) -> None:
        if self.hook not in HOOKS:
            raise ValueError(f"choice {self.group!r}: hook={self.hook!r} is not one of {', '.join(HOOKS)}")
        default = self.config().name
        if self.gpt2 and default != self.gpt2:
            raise ValueError(f"choice {self.group!r}: the config's default name {default!r} must be GPT-2's "
                             f"value {self.gpt2!r} (the baseline)")
        object.__setattr__(self, "gpt2", default)  # frozen: filled in once, here
        object.__setattr__(self, "llama2", self.llama2 or default)

    @property
    def owns_hook(self) -> bool:
        """Whether the block builds this group's one module at its hook, so no second group may take it."""
        return self.hook in OWNED_HOOKS

    @property
    def values(self) -> list[str]:
        """Every value, GPT-2's first, then Llama-2's, then the rest in registry order."""
        rest = [v for v in self.registry.names() if v not in (self.gpt2, self.llama2)]
        return list(dict.fromkeys([self.gpt2, self.llama2, *rest]))

    @property
    def flips(self) -> list[str]:
        if self.flip_values is not None:
            return list(self.flip_values)
        return [v for v in self.values if v != self.gpt2 and not self.registry.traits(v).reference_only]

    def at_size(self, value: str, kv_heads: int, **settings: Any) -> Any:
        """A config at ``value`` with what it needs at a size filled in (GQA's ``kv_heads`` KV heads)."""
        config = self.at(value, **settings)
        return self.sized(config, kv_heads) if self.sized is not None else config

    @property
    def after_llama2(self) -> list[str]:
        """The flips that are neither GPT-2's nor Llama-2's value: what ``+sweep=modern`` puts on Llama-2's block."""
        return [v for v in self.flips if v not in (self.gpt2, self.llama2)]

    @property
    def in_llama2(self) -> bool:
        """Whether Llama-2 moved this choice away from GPT-2's value (the five the harness was built around)."""
        return self.gpt2 != self.llama2

    def shown(self, value: str) -> str:
        return self.display.get(value, value)

    def flip_text(self, value: str) -> str:
        """``LayerNorm → RMSNorm``: a flip from GPT-2's value, as a table row names it."""
        return f"{self.shown(self.gpt2)} → {self.shown(value)}"

    def value_name(self, value: str) -> str:
        switch = {"on": self.group, "off": f"no{self.group}"}
        return self.names.get(value, switch.get(value, value))

    def has(self, arch: Arch, value: str) -> bool:
        if self.matches is not None:
            return self.matches(arch, value)
        return getattr(arch, self.group).name == value

    def describe(self, value: str, about: str, display: str | None = None, claim: Claim | None = None) -> None:
        """Say what a value registered into this group from outside its module is (a plugin's ``ffn=relu2``): its
        ``about`` line, how prose spells it, and a claim read from its flip, as the declaration says its own."""
        DECLARED.refuse_if_frozen(f"{self.group}={value}'s description")
        if value not in self.registry:
            raise ValueError(f"{self.group}={value}: register it ({self.registry.key}) before describing it")
        if value in self.about:
            raise DuplicateError(f"{self.group}={value} is described twice: by {self.registry.source(value)} and by "
                                 f"{current_source()}")
        self.about[value] = about
        if display is not None:
            self.display[value] = display
        if claim is not None:
            self.value_claims[value] = claim

    def at(self, value: str, **settings: Any) -> Any:
        """A config of this group at ``value`` (other settings at their defaults unless given)."""
        return self.config(name=value, **settings)
