"""The block parts: plain ``torch.nn`` modules, each variant registered under its config name.

Nothing here knows of Hydra, files or timing. Build from an ``ArchConfig``::

    from components import ArchConfig, build_lm, preset
    lm = build_lm(preset("llama2-7b"), device="meta")
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from components.attention import ATTENTIONS, AttnConfig, CausalSelfAttention, KVCache, new_cache
from components.bias import BiasConfig
from components.block import Block
from components.choice import Choice, Claim, choice, choices, ladder_choices, llama2_choices
from components.config import ArchConfig, ConfigError, ModelConfig
from components.declarations import import_built_ins
from components.feedforward import FFNS, FFNConfig, GeluMLP, SwiGLU, ffn_hidden_dim
from components.mla import LatentCache, MultiHeadLatentAttention
from components.model import Decoder, LanguageModel, common_random_init, count_parameters
from components.norms import NORMS, LayerNorm, NormConfig, RMSNorm
from components.positions import POSITIONS, LearnedPositions, NoPositions, PosConfig, RotaryPositions
from components.presets import PRESETS, llama2_block, preset
from components.registry import Registry, UnknownVariantError

# Every module of the package, so each choice declared beside its components is known without being listed here.
import_built_ins(__name__, __path__)


def registries() -> dict[str, Registry]:
    """The registry behind each choice, keyed by its config group."""
    return {c.group: c.registry for c in choices()}


def build_decoder(cfg: ArchConfig, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> Decoder:
    """The timed unit: positions, ``cfg.model.n_layers`` blocks and the final norm."""
    return _build(Decoder, cfg, device, dtype)


def build_lm(cfg: ArchConfig, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> LanguageModel:
    """A decoder LM; ``device="meta"`` builds any size without allocating, for counting."""
    return _build(LanguageModel, cfg, device, dtype)


def _build(cls: type[nn.Module], cfg: ArchConfig, device: torch.device | str, dtype: torch.dtype | None) -> nn.Module:
    cfg.validate()
    with torch.device(device), _values_skipped(torch.device(device).type == "meta"):
        module = cls(cfg)
    return module.to(dtype) if dtype is not None else module


@contextlib.contextmanager
def _values_skipped(skip: bool) -> Iterator[None]:
    """On the meta device a parameter has no values, yet each init call runs torch's Python decompositions (about
    two seconds for the published presets): built only to be counted, a model skips them."""
    names = ("kaiming_uniform_", "uniform_", "normal_", "ones_", "zeros_")
    saved = {n: getattr(nn.init, n) for n in names}
    if skip:
        for n in names:
            setattr(nn.init, n, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(nn.init, n, f)


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
    "Choice",
    "Claim",
    "ConfigError",
    "Decoder",
    "FFNConfig",
    "GeluMLP",
    "KVCache",
    "LanguageModel",
    "LatentCache",
    "LayerNorm",
    "LearnedPositions",
    "ModelConfig",
    "MultiHeadLatentAttention",
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
    "choice",
    "choices",
    "common_random_init",
    "count_parameters",
    "ffn_hidden_dim",
    "ladder_choices",
    "llama2_block",
    "llama2_choices",
    "new_cache",
    "preset",
    "registries",
]
