"""The block parts: plain ``torch.nn`` modules, each variant registered under its config name.

Nothing here knows of Hydra, files or timing. Build from an ``ArchConfig``::

    from components import ArchConfig, build_lm, preset
    lm = build_lm(preset("llama2-7b"), device="meta")

The API a choice is declared with (``Choice``, ``declare``, ``choices``, ``Registry``, ``Work``, ...) is imported from
``blockbench``, its one path; modules of this package import it from the modules that define it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from components import declarations
from components.attention import ATTENTIONS, AttnConfig, CausalSelfAttention, KVCache, new_cache
from components.bias import BiasConfig
from components.block import Block
from components.config import ArchConfig, ConfigError, ModelConfig
from components.feedforward import FFNS, FFNConfig, GeluMLP, SwiGLU, ffn_hidden_dim
from components.mla import LatentCache, MultiHeadLatentAttention
from components.model import Decoder, LanguageModel, common_random_init, count_parameters
from components.norms import NORMS, LayerNorm, NormConfig, RMSNorm
from components.positions import POSITIONS, LearnedPositions, NoPositions, PosConfig, RotaryPositions
from components.presets import (
    LLAMA2_TIES_EMBEDDINGS,
    PRESETS,
    embeddings_text,
    llama2_block,
    llama2_model,
    llama2_values,
    preset,
)
from components.registry import UnknownVariantError

if TYPE_CHECKING:
    from components.registry import Registry

# Every module of the package, so each choice declared beside its components is known without being listed here.
declarations.import_built_ins(__name__, __path__)


def registries() -> dict[str, Registry]:
    """The registry behind each choice, keyed by its config group."""
    return {declared.group: declared.registry for declared in declarations.choices()}


def build_decoder(arch: ArchConfig, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> Decoder:
    """The timed unit: positions, ``arch.model.n_layers`` blocks and the final norm."""
    return _build(Decoder, arch, device, dtype)


def build_lm(arch: ArchConfig, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> LanguageModel:
    """A decoder LM; ``device="meta"`` builds any size without allocating, for counting."""
    return _build(LanguageModel, arch, device, dtype)


def _build(cls: type[nn.Module], arch: ArchConfig, device: torch.device | str, dtype: torch.dtype | None) -> nn.Module:
    arch.validate()
    on_meta = torch.device(device).type == "meta"
    with torch.device(device), (_NoFillsOnMeta() if on_meta else contextlib.nullcontext()):
        module = cls(arch)
    return module.to(dtype) if dtype is not None else module


class _NoFillsOnMeta(TorchFunctionMode):
    """Skips the in-place fills (``nn.init``'s and the tensor methods they call) of meta tensors, which hold no values
    to fill, while a model is built to be counted: each runs torch's Python decompositions, which would make counting
    slow for nothing. A mode like ``torch.device``'s own, so it holds only inside the ``with`` on this thread."""

    # The ``nn.init`` functions that answer to a mode, and the tensor methods the others (``ones_``, ``zeros_``) call.
    FILLS = frozenset({nn.init.uniform_, nn.init.normal_, nn.init.constant_, nn.init.kaiming_uniform_,
                       torch.Tensor.uniform_, torch.Tensor.normal_, torch.Tensor.fill_, torch.Tensor.zero_})

    def __torch_function__(self, func: Callable, types: object, args: tuple = (), kwargs: dict | None = None) -> object:
        kwargs = kwargs or {}
        if func in self.FILLS:
            tensor = args[0] if args else kwargs["tensor"]
            if tensor.is_meta:
                return tensor
        return func(*args, **kwargs)


__all__ = [
    "ATTENTIONS",
    "FFNS",
    "LLAMA2_TIES_EMBEDDINGS",
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
    "LatentCache",
    "LayerNorm",
    "LearnedPositions",
    "ModelConfig",
    "MultiHeadLatentAttention",
    "NoPositions",
    "NormConfig",
    "PosConfig",
    "RMSNorm",
    "RotaryPositions",
    "SwiGLU",
    "UnknownVariantError",
    "build_decoder",
    "build_lm",
    "common_random_init",
    "count_parameters",
    "embeddings_text",
    "ffn_hidden_dim",
    "llama2_block",
    "llama2_model",
    "llama2_values",
    "new_cache",
    "preset",
    "registries",
]
