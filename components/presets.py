"""Published shapes as ``ArchConfig`` values. Build them on the meta device to count without memory.

GPT-2: Radford et al. 2019 and OpenAI's released checkpoints (vocab 50257, context 1024, tied head).
Llama-2: Touvron et al. 2023 and Meta's ``params.json`` (vocab 32000, context 4096, untied head).
Mistral-7B (v0.1): Jiang et al. 2023 and its published ``config.json`` (``MISTRAL_7B_CONFIG``): Llama-2's block with
GQA, a wider SwiGLU and a sliding window.
"""

from __future__ import annotations

from dataclasses import replace

from components.config import ArchConfig, ModelConfig
from components.declarations import choice, llama2_choices
from components.positions import PosConfig

# Llama-2 unties its input and output embeddings (Meta's checkpoints hold a separate output matrix); GPT-2 ties them,
# as ``ModelConfig`` does by default. A model setting beside the choices, not a choice, declared here once: Llama-2's
# presets and ``llama2_model`` (``baseline=llama2``, the labels) read it, and so do the ``variant=llama2`` configs
# (``ablations.config.generated_variants``) and the prose that says what Llama-2's block is (``embeddings_text``).
LLAMA2_TIES_EMBEDDINGS = False


def llama2_model(model: ModelConfig) -> ModelConfig:
    """``model`` with Llama-2's embeddings (``LLAMA2_TIES_EMBEDDINGS``), the one model setting its block moves."""
    return replace(model, tie_embeddings=LLAMA2_TIES_EMBEDDINGS)


def embeddings_text(tied: bool) -> str:
    """How prose names a model's embeddings: ``tied embeddings`` or ``untied embeddings``."""
    return "tied embeddings" if tied else "untied embeddings"


def llama2_values() -> dict[str, str]:
    """Each choice Llama-2 moved from GPT-2's, by group, at Llama-2's value: the block before any choice is sized
    (the ``variant=llama2`` overrides and the regression check's ``block/llama2`` case name it so)."""
    return {declared.group: declared.llama2 for declared in llama2_choices()}


def llama2_block(model: ModelConfig, kv_heads: int, layout: str = PosConfig.layout) -> ArchConfig:
    """Llama-2's block on ``model``: every choice Llama-2 moved at its value, sized as its declaration sizes it (GQA
    at ``kv_heads`` KV heads), every other choice at GPT-2's; RoPE rotates pairs in ``layout``.

    The one definition: ``baseline=llama2``, the presets, the labels and the predictor's ``llama2`` flips build it, and
    ``variant=llama2`` and the timed ``block/llama2`` cases compose the same block from ``llama2_values``
    (``tests/ablations/test_llama2_block.py``). The layout defaults to what ``pos=rope`` composes, ``half``, the
    measured block's (docs/choices.md says why); ``interleaved`` is Meta's reference code. The two are the same model
    up to a fixed permutation of Q's and K's rows, so the choice changes no count.
    """
    arch = ArchConfig(model=model, **{g: choice(g).at_size(v, kv_heads) for g, v in llama2_values().items()})
    return arch.replace(pos=replace(arch.pos, layout=layout))


def gpt2(d_model: int, n_layers: int, n_heads: int) -> ArchConfig:
    """Every choice at GPT-2's value: the choices' defaults."""
    return ArchConfig(model=ModelConfig(d_model, n_layers, n_heads, max_seq_len=1024, vocab_size=50257,
                                        tie_embeddings=True))


def llama2(
    d_model: int,
    n_layers: int,
    n_heads: int,
    n_kv_heads: int | None = None,
    multiple_of: int = 256,
    multiplier: float | None = None,
) -> ArchConfig:
    """Llama-2 at a published size. ``n_kv_heads`` None: every head its own KV head, which the declaration reads as
    MHA (``llama2-mha``), as Llama-2-7B and 13B have; the model configs' ``gqa_kv_heads`` say the same."""
    model = ModelConfig(d_model, n_layers, n_heads, max_seq_len=4096, vocab_size=32000,
                        tie_embeddings=LLAMA2_TIES_EMBEDDINGS)
    arch = llama2_block(model, n_kv_heads or n_heads)
    return arch.replace(ffn=replace(arch.ffn, multiple_of=multiple_of, multiplier=multiplier))


# The file every Mistral-7B number below is read from (hidden_size 4096, num_hidden_layers 32, num_attention_heads 32,
# num_key_value_heads 8, intermediate_size 14336, vocab_size 32000, max_position_embeddings 32768, sliding_window
# 4096, rope_theta 10000.0, rms_norm_eps 1e-05, tie_word_embeddings false, hidden_act silu).
MISTRAL_7B_CONFIG = "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"


def mistral(
    d_model: int,
    n_layers: int,
    n_heads: int,
    n_kv_heads: int,
    ffn_hidden: int,
    window: int,
    max_seq_len: int,
    vocab_size: int = 32000,
) -> ArchConfig:
    """Mistral's block: every choice at Llama-2's value, GQA at ``n_kv_heads``, SwiGLU at an explicit width (Mistral
    publishes ``intermediate_size`` itself rather than Llama's rounding rule) and a sliding window of ``window`` keys.

    RoPE at theta 10000 and RMSNorm at eps 1e-5 are Llama-2's own settings, as Mistral's config has them; RoPE in
    Llama-2's block's layout (``half``, as the Hub's weights are; Mistral's reference code rotates adjacent pairs, the
    same math after permuting Q's and K's rows), which changes no count.
    """
    model = ModelConfig(d_model, n_layers, n_heads, max_seq_len=max_seq_len, vocab_size=vocab_size,
                        tie_embeddings=False)
    arch = llama2_block(model, n_kv_heads)
    return arch.replace(ffn=replace(arch.ffn, hidden_dim=ffn_hidden), attn=replace(arch.attn, window=window))


PRESETS = {
    "gpt2": lambda: gpt2(768, 12, 12),  # 124M
    "gpt2-medium": lambda: gpt2(1024, 24, 16),  # 355M
    "gpt2-large": lambda: gpt2(1280, 36, 20),  # 774M
    "gpt2-xl": lambda: gpt2(1600, 48, 25),  # 1.5B
    "llama2-7b": lambda: llama2(4096, 32, 32),
    "llama2-13b": lambda: llama2(5120, 40, 40),
    "llama2-70b": lambda: llama2(8192, 80, 64, n_kv_heads=8, multiple_of=4096, multiplier=1.3),
    # 7,241,732,096 parameters; every size from MISTRAL_7B_CONFIG.
    "mistral-7b": lambda: mistral(4096, 32, 32, n_kv_heads=8, ffn_hidden=14336, window=4096, max_seq_len=32768),
}


def preset(name: str) -> ArchConfig:
    """A fresh ``ArchConfig`` for a published model; unknown names list the known ones."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"preset={name!r} is not known; choose one of: {', '.join(PRESETS)}") from None
