"""Published shapes as ``ArchConfig`` values. Build them on the meta device to count without memory.

GPT-2: Radford et al. 2019 and OpenAI's released checkpoints (vocab 50257, context 1024, tied head).
Llama-2: Touvron et al. 2023 and Meta's ``params.json`` (vocab 32000, context 4096, untied head).
"""

from __future__ import annotations

from components.config import ArchConfig, AttnConfig, BiasConfig, FFNConfig, ModelConfig, NormConfig, PosConfig


def gpt2(d_model: int, n_layers: int, n_heads: int) -> ArchConfig:
    return ArchConfig(
        model=ModelConfig(
            d_model, n_layers, n_heads, max_seq_len=1024, vocab_size=50257, tie_embeddings=True
        ),
        pos=PosConfig("learned"),
        norm=NormConfig("layernorm", eps=1e-5),
        ffn=FFNConfig("gelu"),
        attn=AttnConfig("mha"),
        bias=BiasConfig("on"),
    )


def llama2(
    d_model: int,
    n_layers: int,
    n_heads: int,
    n_kv_heads: int | None = None,
    multiple_of: int = 256,
    multiplier: float | None = None,
) -> ArchConfig:
    return ArchConfig(
        model=ModelConfig(
            d_model, n_layers, n_heads, max_seq_len=4096, vocab_size=32000, tie_embeddings=False
        ),
        pos=PosConfig("rope", theta=10000.0, layout="interleaved"),
        norm=NormConfig("rmsnorm", eps=1e-5),
        ffn=FFNConfig("swiglu", multiple_of=multiple_of, multiplier=multiplier),
        attn=AttnConfig("gqa", n_kv_heads) if n_kv_heads else AttnConfig("mha"),
        bias=BiasConfig("off"),
    )


PRESETS = {
    "gpt2": lambda: gpt2(768, 12, 12),  # 124M
    "gpt2-medium": lambda: gpt2(1024, 24, 16),  # 355M
    "gpt2-large": lambda: gpt2(1280, 36, 20),  # 774M
    "gpt2-xl": lambda: gpt2(1600, 48, 25),  # 1.5B
    "llama2-7b": lambda: llama2(4096, 32, 32),
    "llama2-13b": lambda: llama2(5120, 40, 40),
    "llama2-70b": lambda: llama2(8192, 80, 64, n_kv_heads=8, multiple_of=4096, multiplier=1.3),
}


def preset(name: str) -> ArchConfig:
    """A fresh ``ArchConfig`` for a published model; unknown names list the known ones."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"preset={name!r} is not known; choose one of: {', '.join(PRESETS)}") from None
