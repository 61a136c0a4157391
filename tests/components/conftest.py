"""Shared fixtures for the component tests: tiny configs, seeded non-trivial weights, the variant grid.

Test modules take these as fixtures (never ``import conftest``), so they work in any pytest import mode.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch
from torch import nn

from blockbench import choice
from components import ArchConfig, AttnConfig, BiasConfig, FFNConfig, ModelConfig, NormConfig, PosConfig

# (pos, layout), norm, ffn, (attn, n_kv_heads): every combination of every declared value of the four module
# choices, RoPE in both of its layouts, GQA at 2 KV heads of 4.
POS_VARIANTS = [(v, layout) for v in choice("pos").values
                for layout in (("half", "interleaved") if v == "rope" else ("half",))]
NORM_VARIANTS = choice("norm").values
FFN_VARIANTS = choice("ffn").values
ATTN_VARIANTS = [(v, 2 if v == "gqa" else None) for v in choice("attn").values]


def tiny_arch(
    pos: str = "learned",
    norm: str = "layernorm",
    ffn: str = "gelu",
    attn: str = "mha",
    n_kv_heads: int | None = None,
    layout: str = "half",
    bias: bool = True,
    d_model: int = 32,
    n_heads: int = 4,
    n_layers: int = 2,
    max_seq_len: int = 64,
    vocab_size: int = 53,
) -> ArchConfig:
    return ArchConfig(
        model=ModelConfig(
            d_model=d_model,
            n_layers=n_layers,
            n_heads=n_heads,
            max_seq_len=max_seq_len,
            vocab_size=vocab_size,
            tie_embeddings=False,
        ),
        pos=PosConfig(pos, layout=layout),
        norm=NormConfig(norm),
        ffn=FFNConfig(ffn, multiple_of=8),
        bias=BiasConfig("on" if bias else "off"),
        attn=AttnConfig(attn, n_kv_heads),
    )


def randomize(module: nn.Module, seed: int = 0, scale: float = 1.0) -> nn.Module:
    """Overwrite every parameter with seeded noise: norm weights near 1, biases and matrices non-zero.

    The default init has zero biases and unit norm weights, which would hide a dropped bias or weight.
    Matrices get std ``scale / sqrt(fan_in)`` so activations stay O(1) through a few layers.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if p.ndim == 1 and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * noise)
            elif p.ndim == 1:
                p.copy_(0.1 * noise)
            else:
                p.copy_(noise * (scale / p.shape[-1] ** 0.5))
    return module


@pytest.fixture
def make_arch() -> Callable[..., ArchConfig]:
    return tiny_arch


@pytest.fixture
def rand_params() -> Callable[..., nn.Module]:
    return randomize


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes ``variant`` runs once per combination of pos x norm x ffn x attn."""
    if "variant" not in metafunc.fixturenames:
        return
    params, ids = [], []
    for (pos, layout), norm, ffn, (attn, kv) in itertools.product(
        POS_VARIANTS, NORM_VARIANTS, FFN_VARIANTS, ATTN_VARIANTS
    ):
        params.append(dict(pos=pos, layout=layout, norm=norm, ffn=ffn, attn=attn, n_kv_heads=kv))
        ids.append("-".join([pos + ("-" + layout if pos == "rope" else ""), norm, ffn, attn]))
    metafunc.parametrize("variant", params, ids=ids)
