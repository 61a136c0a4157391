"""Architecture as data: the sizes (``ModelConfig``) and one config per declared design choice, in an ``ArchConfig``.

The choice configs live beside their components (``NormConfig`` in ``norms.py``) and are the Hydra schema of their
groups (``conf/``), so a CLI override and a Python call describe a model identically. ``ArchConfig`` has one
attribute per declared choice (``components.choice``): a new group needs no edit here. It takes the choices by
keyword only, so a new group can never be filled in by position. ``ArchConfig.validate`` raises ``ConfigError``
naming the offending key in the dotted form the CLI uses (``model.d_model``), so both entry points give the same
message.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, is_dataclass
from dataclasses import replace as replace_dataclass
from typing import TYPE_CHECKING, Any

# Imported here, never inside a method: the regression check runs this code while another tree's ``components``
# is the one in ``sys.modules``, where a call-time import would find that tree's modules.
from components.declarations import choices as declared
from components.registry import UnknownVariantError


class ConfigError(ValueError):
    """An architecture setting that cannot be built; the message names the key and what is allowed."""


def require_positive(key: str, value: float) -> None:
    """Raise ``ConfigError`` naming ``key`` in its dotted form (``norm.eps``) unless ``value`` is > 0."""
    if value <= 0:
        raise ConfigError(f"{key}={value} must be > 0")


@dataclass
class ModelConfig:
    """Sizes and the settings that are not design choices (kept fixed within a sweep)."""

    d_model: int = 768
    n_layers: int = 2
    n_heads: int = 12
    max_seq_len: int = 1024
    vocab_size: int = 256
    tie_embeddings: bool = True
    # GPT-2/nanoGPT init: N(0, init_std), residual projections scaled by 1/sqrt(2 n_layers).
    init_std: float = 0.02


class ArchConfig:
    """``model`` plus one config per declared choice (``arch.norm``, ``arch.pos``, ...), each at GPT-2's value
    unless given: ``ArchConfig(model=..., norm=NormConfig("rmsnorm"))``.

    Every group, blockbench's and a plugin's alike, is an attribute set from the catalog (``arch.attn``,
    ``arch.softcap``), typed ``Any``: the group modules import this one, so it imports none of them, not even for
    their types (no import cycle, type-only ones included)."""

    model: ModelConfig

    def __init__(self, model: ModelConfig | None = None, **choices: Any) -> None:
        self.model = model if model is not None else ModelConfig()
        groups = declared()
        unknown = set(choices) - {choice.group for choice in groups}
        if unknown:
            raise TypeError(f"ArchConfig got unknown choice group(s) {sorted(unknown)}; declared: "
                            f"{', '.join(choice.group for choice in groups)}")
        for choice in groups:
            value = choices.get(choice.group)
            setattr(self, choice.group, value if value is not None else choice.config())

    if TYPE_CHECKING:

        def __getattr__(self, group: str) -> Any: ...  # a plugin's group: set in ``__init__`` like the rest

    @property
    def groups(self) -> list[str]:
        return [choice.group for choice in declared()]

    def replace(self, **changes: Any) -> ArchConfig:
        """A copy with the given groups (or ``model``) replaced; the rest copied, never shared."""
        current = {"model": self.model, **{g: getattr(self, g) for g in self.groups}}
        current = {k: copy.copy(v) for k, v in current.items()}
        current.update(changes)
        return ArchConfig(**current)

    def with_values(self, **values: str) -> ArchConfig:
        """A copy with each named group at a value (its other settings kept): ``arch.with_values(norm="rmsnorm")``."""
        return self.replace(**{g: replace_dataclass(getattr(self, g), name=v) for g, v in values.items()})

    def to_dict(self) -> dict[str, dict]:
        return {"model": asdict(self.model), **{g: asdict(getattr(self, g)) for g in self.groups}}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArchConfig) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        parts = ", ".join(f"{g}={getattr(self, g)!r}" for g in ["model", *self.groups])
        return f"ArchConfig({parts})"

    @property
    def head_dim(self) -> int:
        return self.model.d_model // self.model.n_heads

    @property
    def n_kv_heads(self) -> int:
        return self.attn.kv_heads(self.model.n_heads)

    @property
    def ffn_hidden(self) -> int:
        return self.ffn.hidden(self.model.d_model)

    def validate(self) -> ArchConfig:
        """Check every cross-field constraint; return self so calls can chain.

        Sizes here; each choice's value against its registry; then each choice config's own ``check(arch)``.
        """
        m = self.model
        for key in ("d_model", "n_layers", "n_heads", "max_seq_len", "vocab_size"):
            value = getattr(m, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"model.{key}={value!r} must be a positive integer")
        if m.d_model % m.n_heads:
            raise ConfigError(f"model.d_model={m.d_model} must be divisible by model.n_heads={m.n_heads}")
        require_positive("model.init_std", m.init_std)
        for choice in declared():
            group_config = getattr(self, choice.group)
            if not is_dataclass(group_config) or group_config.name not in choice.registry:
                name = getattr(group_config, "name", group_config)
                raise UnknownVariantError(
                    f"{choice.group}.name={name!r} is not a known variant; choose one of: {', '.join(choice.values)}"
                )
            check = getattr(group_config, "check", None)
            if check is not None:
                check(self)
        check_one_residual(self)
        return self


def check_one_residual(arch: ArchConfig) -> None:
    """At most one choice replaces how the branches join the residual (hook ``block``): two residual classes do
    not compose (each is the whole join), and taking either would silently drop the other."""
    plugged = [choice for choice in declared()
               if choice.hook == "block" and choice.registry.get(getattr(arch, choice.group).name) is not None]
    if len(plugged) > 1:
        said = " and ".join(f"{choice.group}={getattr(arch, choice.group).name}" for choice in plugged)
        raise ConfigError(f"{said} each replace how the block joins the residual, which one point cannot do twice; "
                          f"allowed: one of them, with "
                          + ", ".join(f"{choice.group}={choice.gpt2}" for choice in plugged[1:]))
