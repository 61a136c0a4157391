"""The block parts: plain ``torch.nn`` modules, each variant registered under its config name.

Nothing here knows of Hydra, files or timing. Build from an ``ArchConfig``::

    from components import ArchConfig, build_lm, preset
    lm = build_lm(preset("llama2-7b"), device="meta")
"""

from __future__ import annotations

import torch
from torch import nn

from components.attention import ATTENTIONS, CausalSelfAttention, KVCache
from components.block import Block
from components.config import (
    ArchConfig,
    AttnConfig,
    BiasConfig,
    ConfigError,
    FFNConfig,
    ModelConfig,
    NormConfig,
    PosConfig,
    ffn_hidden_dim,
)
from components.feedforward import FFNS, GeluMLP, SwiGLU
from components.model import Decoder, LanguageModel, count_parameters
from components.norms import NORMS, LayerNorm, RMSNorm
from components.positions import POSITIONS, LearnedPositions, NoPositions, RotaryPositions
from components.presets import PRESETS, preset
from components.registry import Registry, UnknownVariantError


def registries() -> dict[str, Registry]:
    """The registry behind each choice, keyed by its config group."""
    return {"pos": POSITIONS, "norm": NORMS, "ffn": FFNS, "attn": ATTENTIONS}


def build_decoder(cfg: ArchConfig, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> Decoder:
    """The timed unit: positions, ``cfg.model.n_layers`` blocks and the final norm."""
    return _build(Decoder, cfg, device, dtype)


def build_lm(cfg: ArchConfig, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> LanguageModel:
    """A decoder LM; ``device="meta"`` builds any size without allocating, for counting."""
    return _build(LanguageModel, cfg, device, dtype)


def _build(cls: type[nn.Module], cfg: ArchConfig, device: torch.device | str, dtype: torch.dtype | None) -> nn.Module:
    cfg.validate()
    with torch.device(device):
        module = cls(cfg)
    return module.to(dtype) if dtype is not None else module


__all__ = [
    "ATTENTIONS",
    "FFNS",
    "NORMS",
    "POSITIONS",
    "PRESETS",
    "ArchConfig",
    "AttnConfig",
    "BiasConfig",
    "Block",
    "CausalSelfAttention",
    "ConfigError",
    "Decoder",
    "FFNConfig",
    "GeluMLP",
    "KVCache",
    "LanguageModel",
    "LayerNorm",
    "LearnedPositions",
    "ModelConfig",
    "NoPositions",
    "NormConfig",
    "PosConfig",
    "RMSNorm",
    "Registry",
    "RotaryPositions",
    "SwiGLU",
    "UnknownVariantError",
    "build_decoder",
    "build_lm",
    "count_parameters",
    "ffn_hidden_dim",
    "preset",
    "registries",
]
