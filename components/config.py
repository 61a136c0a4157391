"""Architecture as data: one dataclass per design choice, grouped into an ``ArchConfig``.

The same dataclasses are the Hydra schema (``conf/``), so a CLI override and a Python call describe a
model identically. ``ArchConfig.validate`` raises ``ConfigError`` naming the offending key in the dotted
form the CLI uses (``model.d_model``), so both entry points give the same message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


class ConfigError(ValueError):
    """An architecture setting that cannot be built; the message names the key and what is allowed."""


@dataclass
class ModelConfig:
    """Sizes and the settings that are not one of the five choices (kept fixed within a sweep)."""

    d_model: int = 768
    n_layers: int = 2
    n_heads: int = 12
    max_seq_len: int = 1024
    vocab_size: int = 256
    tie_embeddings: bool = True
    # GPT-2/nanoGPT init: N(0, init_std), residual projections scaled by 1/sqrt(2 n_layers).
    init_std: float = 0.02


@dataclass
class PosConfig:
    name: str = "learned"  # learned | rope | none
    theta: float = 10000.0
    # Meta's Llama code rotates adjacent pairs ("interleaved"); HF and litgpt rotate halves ("half").
    layout: str = "half"


@dataclass
class NormConfig:
    name: str = "layernorm"  # layernorm | rmsnorm
    eps: float = 1e-5


@dataclass
class FFNConfig:
    name: str = "gelu"  # gelu | swiglu
    # Explicit hidden width; None means the variant's own rule (4d for GELU, Llama's 2/3 rule for SwiGLU).
    hidden_dim: int | None = None
    # Llama rounds the SwiGLU width up to a multiple of this (256 at 7B). Small d needs a small value
    # to match GELU's 8 d^2 parameters; 256 at d=128 would flatter SwiGLU with +12% parameters.
    multiple_of: int = 8
    multiplier: float | None = None  # Llama-2-70B: 1.3


@dataclass
class AttnConfig:
    name: str = "mha"  # mha | gqa | mqa
    # None: the variant decides (mha: n_heads, mqa: 1). gqa requires a value.
    n_kv_heads: int | None = None


@dataclass
class BiasConfig:
    """The additive bias of every linear layer: GPT-2 has one (``on``), Llama-2 none (``off``).

    LayerNorm's shift is part of LayerNorm's definition and stays with ``norm=layernorm``; RMSNorm has none.
    So ``bias=off`` with LayerNorm is "no linear biases", and the norm sweep keeps measuring only the norm.
    """

    name: str = "on"  # on | off

    @property
    def enabled(self) -> bool:
        return self.name == "on"


@dataclass
class ArchConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    pos: PosConfig = field(default_factory=PosConfig)
    norm: NormConfig = field(default_factory=NormConfig)
    ffn: FFNConfig = field(default_factory=FFNConfig)
    attn: AttnConfig = field(default_factory=AttnConfig)
    bias: BiasConfig = field(default_factory=BiasConfig)

    @property
    def head_dim(self) -> int:
        return self.model.d_model // self.model.n_heads

    @property
    def n_kv_heads(self) -> int:
        return resolve_kv_heads(self.attn, self.model.n_heads)

    @property
    def ffn_hidden(self) -> int:
        return ffn_hidden_dim(self.ffn, self.model.d_model)

    def validate(self) -> ArchConfig:
        """Check every cross-field constraint; return self so calls can chain."""
        from components import registries
        from components.registry import UnknownVariantError

        m = self.model
        for key in ("d_model", "n_layers", "n_heads", "max_seq_len", "vocab_size"):
            value = getattr(m, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"model.{key}={value!r} must be a positive integer")
        if m.d_model % m.n_heads:
            raise ConfigError(f"model.d_model={m.d_model} must be divisible by model.n_heads={m.n_heads}")
        if m.init_std <= 0:
            raise ConfigError(f"model.init_std={m.init_std} must be > 0")
        for key, reg in registries().items():
            name = getattr(self, key).name
            if name not in reg:
                raise UnknownVariantError(
                    f"{key}.name={name!r} is not a known variant; choose one of: {', '.join(reg.names())}"
                )
        if self.pos.name == "rope":
            if self.head_dim % 2:
                raise ConfigError(f"pos=rope needs an even head size, but model.d_model/model.n_heads={self.head_dim}")
            if self.pos.layout not in ("half", "interleaved"):
                raise ConfigError(f"pos.layout={self.pos.layout!r} is not allowed; choose one of: half, interleaved")
            if self.pos.theta <= 0:
                raise ConfigError(f"pos.theta={self.pos.theta} must be > 0")
        if self.bias.name not in ("on", "off"):
            raise ConfigError(f"bias.name={self.bias.name!r} is not allowed; choose one of: on, off")
        if self.norm.eps <= 0:
            raise ConfigError(f"norm.eps={self.norm.eps} must be > 0")
        if self.ffn.hidden_dim is not None and self.ffn.hidden_dim < 1:
            raise ConfigError(f"ffn.hidden_dim={self.ffn.hidden_dim} must be a positive integer or null")
        if self.ffn.multiple_of < 1:
            raise ConfigError(f"ffn.multiple_of={self.ffn.multiple_of} must be a positive integer")
        if self.ffn.multiplier is not None and self.ffn.multiplier <= 0:
            raise ConfigError(f"ffn.multiplier={self.ffn.multiplier} must be > 0 or null")
        resolve_kv_heads(self.attn, m.n_heads)
        return self


def resolve_kv_heads(attn: AttnConfig, n_heads: int) -> int:
    """KV heads for an attention variant: MHA has one per query head, MQA one in all, GQA in between."""
    kv = attn.n_kv_heads
    if attn.name == "mha":
        if kv not in (None, n_heads):
            raise ConfigError(
                f"attn.n_kv_heads={kv} contradicts attn=mha (which has n_kv_heads = model.n_heads = {n_heads}); "
                "use attn=gqa for fewer KV heads"
            )
        return n_heads
    if attn.name == "mqa":
        if kv not in (None, 1):
            raise ConfigError(f"attn.n_kv_heads={kv} contradicts attn=mqa (which has 1); use attn=gqa")
        return 1
    if kv is None:
        raise ConfigError(f"attn=gqa needs attn.n_kv_heads: a divisor of model.n_heads={n_heads}")
    if not isinstance(kv, int) or kv < 1 or n_heads % kv:
        divisors = [d for d in range(1, n_heads + 1) if n_heads % d == 0]
        raise ConfigError(f"attn.n_kv_heads={kv} must be >= 1 and divide model.n_heads={n_heads}; allowed: {divisors}")
    return kv


def ffn_hidden_dim(ffn: FFNConfig, d_model: int) -> int:
    """Hidden width of the feed-forward layer.

    GELU: 4d. SwiGLU: Llama's rule ``multiple_of * ceil(int(multiplier * int(2 * 4d / 3)) / multiple_of)``
    (4096 -> 11008; 8192 with 1.3 and 4096 -> 28672), which keeps three d x h matrices near GELU's 8 d^2.
    """
    if ffn.hidden_dim is not None:
        return ffn.hidden_dim
    if ffn.name != "swiglu":
        return 4 * d_model
    hidden = int(2 * 4 * d_model / 3)
    if ffn.multiplier is not None:
        hidden = int(ffn.multiplier * hidden)
    return ffn.multiple_of * math.ceil(hidden / ffn.multiple_of)
