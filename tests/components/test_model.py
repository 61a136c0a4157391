"""Whole-model properties for every variant: causality, KV-cache decoding, published sizes."""

from __future__ import annotations

import pytest
import torch

from components import Block, Decoder, LanguageModel, build_decoder, build_lm, count_parameters, preset
from components.attention import CausalSelfAttention

SEQ = 12


def _tokens(arch, seed=0, batch=2, seq=SEQ):
    return torch.randint(0, arch.model.vocab_size, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _lm(make_arch, rand_params, variant, seed=0):
    arch = make_arch(**variant)
    return arch, rand_params(build_lm(arch), seed=seed, scale=1.5).eval()


@torch.no_grad()
def test_causal(make_arch, rand_params, variant):
    arch, lm = _lm(make_arch, rand_params, variant)
    tokens = _tokens(arch)
    base = lm(tokens)
    for t in (0, 5, SEQ - 1):
        changed = tokens.clone()
        changed[:, t] = (changed[:, t] + 1 + torch.arange(2)) % arch.model.vocab_size
        out = lm(changed)
        torch.testing.assert_close(out[:, :t], base[:, :t], atol=1e-6, rtol=0)
        diff = (out[:, t:] - base[:, t:]).abs()
        assert diff[:, 0].max() > 1e-3  # the changed position itself
        if t < SEQ - 1:
            assert diff[:, 1:].amax(dim=-1).min() > 1e-5  # and every later position
    # Each row also equals the model run on the prefix alone.
    torch.testing.assert_close(lm(tokens[:, :5]), base[:, :5], atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_kv_cache_decoding_equals_full_forward(make_arch, rand_params, variant):
    arch, lm = _lm(make_arch, rand_params, variant, seed=1)
    tokens = _tokens(arch, seed=1)
    full = lm(tokens)
    cache = lm.new_cache(batch_size=2, max_seq_len=SEQ + 4)
    pieces = [lm(tokens[:, :4], cache)]  # prefill
    assert cache.pos == 4
    pieces.append(lm(tokens[:, 4:8], cache))  # a multi-token chunk after the prefix
    for i in range(8, SEQ):  # then one token at a time
        pieces.append(lm(tokens[:, i : i + 1], cache))
    assert cache.pos == SEQ
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=2e-5, rtol=1e-5)

    # Rewinding the cache and repeating a step gives the same logits.
    cache.pos = SEQ - 1
    torch.testing.assert_close(lm(tokens[:, SEQ - 1 :], cache), full[:, SEQ - 1 :], atol=2e-5, rtol=1e-5)


@torch.no_grad()
def test_decoder_cache_uses_model_dtype(make_arch):
    dec = build_decoder(make_arch(pos="rope", attn="gqa", n_kv_heads=2), dtype=torch.bfloat16)
    cache = dec.new_cache(batch_size=1)
    assert cache.k.dtype == torch.bfloat16
    out = dec(torch.randn(1, 3, 32, dtype=torch.bfloat16), cache)
    assert out.dtype == torch.bfloat16 and cache.pos == 3


@pytest.mark.parametrize(
    "name,expected",
    [("gpt2", 124_439_808), ("llama2-7b", 6_738_415_616), ("llama2-70b", 68_976_648_192)],
)
def test_published_parameter_counts_on_meta(name, expected):
    lm = build_lm(preset(name), device="meta")
    assert next(lm.parameters()).device.type == "meta"
    assert count_parameters(lm) == expected


def test_gpt2_head_is_tied_llama_head_is_not():
    gpt2 = build_lm(preset("gpt2"), device="meta")
    assert gpt2.head.weight is gpt2.embed.weight
    llama = build_lm(preset("llama2-7b"), device="meta")
    assert llama.head.weight is not llama.embed.weight


def test_biases_follow_model_bias():
    gpt2 = build_lm(preset("gpt2"), device="meta")
    for module in gpt2.modules():
        if isinstance(module, torch.nn.Linear) and module is not gpt2.head:
            assert module.bias is not None
    llama = build_lm(preset("llama2-7b"), device="meta")
    assert not [n for n, _ in llama.named_parameters() if n.endswith("bias")]


def test_gpt2_and_llama_blocks_are_the_same_class():
    gpt2 = build_lm(preset("gpt2"), device="meta")
    llama = build_lm(preset("llama2-70b"), device="meta")
    assert type(gpt2) is type(llama) is LanguageModel
    assert type(gpt2.decoder) is type(llama.decoder) is Decoder
    assert type(gpt2.decoder.blocks[0]) is type(llama.decoder.blocks[0]) is Block
    assert len(gpt2.decoder.blocks) == 12 and len(llama.decoder.blocks) == 80
    # They differ only in the parts the config plugs in.
    g, ll = gpt2.decoder.blocks[0], llama.decoder.blocks[0]
    kinds = [(type(getattr(g, p)).__name__, type(getattr(ll, p)).__name__) for p in ("norm1", "attn", "ffn")]
    assert kinds == [("LayerNorm", "RMSNorm"), ("MultiHeadAttention", "GroupedQueryAttention"), ("GeluMLP", "SwiGLU")]
    assert isinstance(g.attn, CausalSelfAttention) and isinstance(ll.attn, CausalSelfAttention)
    assert ll.attn.n_kv_heads == 8 and g.attn.n_kv_heads == 12


def test_block_is_pre_norm_residual(make_arch, rand_params):
    arch = make_arch(norm="rmsnorm", ffn="swiglu", attn="gqa", n_kv_heads=2, pos="none")
    block = rand_params(Block(arch), seed=5)
    x = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(6))
    h = x + block.attn(block.norm1(x))
    torch.testing.assert_close(block(x), h + block.ffn(block.norm2(h)), atol=1e-6, rtol=1e-6)


def test_init_scales_residual_projections(make_arch):
    torch.manual_seed(0)
    arch = make_arch(d_model=256, n_heads=4, n_layers=8, bias=True)
    lm = build_lm(arch)
    std = arch.model.init_std
    blk = lm.decoder.blocks[0]
    assert blk.attn.q.weight.std().item() == pytest.approx(std, rel=0.05)
    assert blk.attn.out.weight.std().item() == pytest.approx(std / 4.0, rel=0.05)  # 1/sqrt(2*8)
    assert blk.ffn.down.weight.std().item() == pytest.approx(std / 4.0, rel=0.05)
    assert torch.equal(blk.attn.q.bias, torch.zeros_like(blk.attn.q.bias))
    assert torch.equal(blk.norm1.weight, torch.ones_like(blk.norm1.weight))
