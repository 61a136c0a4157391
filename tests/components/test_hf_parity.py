"""Numerical parity with Hugging Face's own modules, built from small configs with our weights copied in.

GPT-2's block and stack (``GPT2Block``/``GPT2Model``), Llama-2's block with GQA and RoPE (``LlamaDecoderLayer``,
``LlamaRotaryEmbedding``), ALiBi against BLOOM (``BloomAttention``, ``build_alibi_tensor``) and QK-norm against Qwen3
(``Qwen3Attention``): float32, eval mode, dropout 0, HF's eager attention with an explicit causal mask. Where a cache
is involved, our decode through ``KVCache`` (a prefill, then one token at a time) must give HF's full-sequence rows.
Each test also checks that a wrong mapping or layout would be caught.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest
import torch

from components import Block, CausalSelfAttention, Decoder, KVCache, RotaryPositions
from components.positions import ALiBiPositions
from components.qknorm import QKNormConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                reason="transformers is not installed (the [test] extra)")


class _Imported:
    """A module imported at its first attribute: transformers' model modules cost each process of the suite seconds
    at collection, before a test knows whether it runs here."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


transformers = _Imported("transformers")
modeling_bloom = _Imported("transformers.models.bloom.modeling_bloom")
modeling_gpt2 = _Imported("transformers.models.gpt2.modeling_gpt2")
modeling_llama = _Imported("transformers.models.llama.modeling_llama")
modeling_qwen3 = _Imported("transformers.models.qwen3.modeling_qwen3")

# fp32 throughout; the measured errors are in each test.
TOL = dict(atol=1e-5, rtol=1e-5)
BATCH, SEQ, PREFILL = 2, 12, 5


def _x(shape, seed=0, scale=1.0):
    return scale * torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _max_err(a, b):
    return (a - b).abs().max().item()


def causal_mask(t):
    """HF's eager additive mask of shape (1, 1, t, t): 0 where query i sees key j <= i, else fp32's min (as HF's)."""
    seen = torch.ones(t, t, dtype=torch.bool).tril()
    return torch.zeros(1, 1, t, t).masked_fill(~seen, torch.finfo(torch.float32).min)


def _copy(dst, src):
    """Copy a parameter, checking the shape (a transposed or fused tensor must be prepared by the caller)."""
    assert dst.shape == src.shape, (dst.shape, src.shape)
    dst.copy_(src)


def cached_decode(forward, x, cache, advance):
    """``forward(chunk, cache)`` over a prefill of PREFILL tokens, then each later token alone; rows concatenated.

    ``advance``: whether the caller must move ``cache.pos`` (a bare attention or block) or ``forward`` does (Decoder).
    """
    rows = []
    for start, end in [(0, PREFILL), *((i, i + 1) for i in range(PREFILL, x.shape[1]))]:
        rows.append(forward(x[:, start:end], cache))
        if advance:
            cache.pos += end - start
    assert cache.pos == x.shape[1]
    return torch.cat(rows, dim=1)


# --- GPT-2 -------------------------------------------------------------------------------------------------------


def gpt2_config(arch):
    return transformers.GPT2Config(
        n_embd=arch.model.d_model, n_head=arch.model.n_heads, n_layer=arch.model.n_layers,
        n_positions=arch.model.max_seq_len, n_inner=arch.ffn_hidden, activation_function="gelu_new",
        layer_norm_epsilon=arch.norm.eps, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        vocab_size=arch.model.vocab_size, bos_token_id=None, eos_token_id=None, attn_implementation="eager",
    )


def gpt2_block_from_ours(hf, ours):
    """Our Block into a GPT2Block. HF's Conv1D computes ``x @ W + b`` with W of shape (in, out): our nn.Linear
    weights (out, in) transposed; c_attn fuses Q, K, V along its output columns, in that order."""
    a, f = ours.attn, ours.ffn
    _copy(hf.ln_1.weight, ours.norm1.weight)
    _copy(hf.ln_1.bias, ours.norm1.bias)
    _copy(hf.attn.c_attn.weight, torch.cat([a.q.weight.T, a.k.weight.T, a.v.weight.T], dim=1))
    _copy(hf.attn.c_attn.bias, torch.cat([a.q.bias, a.k.bias, a.v.bias]))
    _copy(hf.attn.c_proj.weight, a.out.weight.T)
    _copy(hf.attn.c_proj.bias, a.out.bias)
    _copy(hf.ln_2.weight, ours.norm2.weight)
    _copy(hf.ln_2.bias, ours.norm2.bias)
    _copy(hf.mlp.c_fc.weight, f.up.weight.T)
    _copy(hf.mlp.c_fc.bias, f.up.bias)
    _copy(hf.mlp.c_proj.weight, f.down.weight.T)
    _copy(hf.mlp.c_proj.bias, f.down.bias)


@torch.no_grad()
def test_gpt2_block_matches_hf_gpt2_block(make_arch, rand_params):
    arch = make_arch(pos="learned", norm="layernorm", ffn="gelu", attn="mha", bias=True, d_model=64, n_heads=4)
    ours = rand_params(Block(arch), seed=1).eval()
    hf = modeling_gpt2.GPT2Block(gpt2_config(arch), layer_idx=0).eval()
    gpt2_block_from_ours(hf, ours)
    x = _x((BATCH, SEQ, 64), seed=2)
    got = ours(x)  # positions are added before the block in both: no rotation, no score bias
    want = hf(x, attention_mask=causal_mask(SEQ))
    # Measured max |diff| 1.2e-6 (outputs up to 5.2).
    torch.testing.assert_close(got, want, **TOL)
    # HF's eager GPT-2 attention masks nothing by itself: the mask above is what makes it causal.
    assert _max_err(got, hf(x)) > 1e-3
    # A K/V mix-up in the fused c_attn is caught.
    a = ours.attn
    hf.attn.c_attn.weight.copy_(torch.cat([a.q.weight.T, a.v.weight.T, a.k.weight.T], dim=1))
    assert _max_err(got, hf(x, attention_mask=causal_mask(SEQ))) > 1e-3


@torch.no_grad()
def test_gpt2_decoder_and_cached_decode_match_hf_gpt2_model(make_arch, rand_params):
    """Learned positions added at the input, two blocks and the final LayerNorm: our Decoder against GPT2Model fed
    ``inputs_embeds`` (HF builds its own causal mask here), then our token-by-token decode against the same rows."""
    arch = make_arch(pos="learned", norm="layernorm", ffn="gelu", attn="mha", bias=True, d_model=64, n_heads=4)
    ours = rand_params(Decoder(arch), seed=3).eval()
    hf = modeling_gpt2.GPT2Model(gpt2_config(arch)).eval()
    _copy(hf.wpe.weight, ours.positions.table.weight)
    for hf_block, block in zip(hf.h, ours.blocks, strict=True):
        gpt2_block_from_ours(hf_block, block)
    _copy(hf.ln_f.weight, ours.norm.weight)
    _copy(hf.ln_f.bias, ours.norm.bias)
    x = _x((BATCH, SEQ, 64), seed=4)
    want = hf(inputs_embeds=x, use_cache=False).last_hidden_state
    # Measured max |diff| 1.2e-6 (full sequence) and 1.2e-6 (cached decode).
    torch.testing.assert_close(ours(x), want, **TOL)
    got = cached_decode(ours, x, ours.new_cache(BATCH, SEQ), advance=False)
    torch.testing.assert_close(got, want, **TOL)
    # The position table is what tells the two apart from NoPE: a shifted table is caught.
    hf.wpe.weight.copy_(ours.positions.table.weight.roll(1, dims=0))
    assert _max_err(ours(x), hf(inputs_embeds=x, use_cache=False).last_hidden_state) > 1e-3


# --- Llama-2 -----------------------------------------------------------------------------------------------------


def llama_config(arch):
    return transformers.LlamaConfig(
        hidden_size=arch.model.d_model, intermediate_size=arch.ffn_hidden, num_hidden_layers=arch.model.n_layers,
        num_attention_heads=arch.model.n_heads, num_key_value_heads=arch.n_kv_heads, rms_norm_eps=arch.norm.eps,
        max_position_embeddings=arch.model.max_seq_len, hidden_act="silu", attention_bias=False, mlp_bias=False,
        rope_parameters={"rope_type": "default", "rope_theta": arch.pos.theta}, attention_dropout=0.0,
        attn_implementation="eager",
    )


def llama_layer_from_ours(hf, ours):
    """Our Block into a LlamaDecoderLayer: the same nn.Linear layout, only renamed."""
    names = {
        "input_layernorm.weight": "norm1.weight",
        "self_attn.q_proj.weight": "attn.q.weight",
        "self_attn.k_proj.weight": "attn.k.weight",
        "self_attn.v_proj.weight": "attn.v.weight",
        "self_attn.o_proj.weight": "attn.out.weight",
        "post_attention_layernorm.weight": "norm2.weight",
        "mlp.gate_proj.weight": "ffn.gate.weight",
        "mlp.up_proj.weight": "ffn.up.weight",
        "mlp.down_proj.weight": "ffn.down.weight",
    }
    src = ours.state_dict()
    assert set(src) == set(names.values()) and set(hf.state_dict()) == set(names)
    hf.load_state_dict({theirs: src[mine] for theirs, mine in names.items()})


class LlamaStack(torch.nn.Module):
    """What LlamaModel runs between its embedding and head: rotary (cos, sin), the layers, the final RMSNorm."""

    def __init__(self, config):
        super().__init__()
        self.rotary = modeling_llama.LlamaRotaryEmbedding(config)
        self.layers = torch.nn.ModuleList(
            modeling_llama.LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)
        )
        self.norm = modeling_llama.LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, x):
        position_ids = torch.arange(x.shape[1])[None]
        position_embeddings = self.rotary(x, position_ids)
        for layer in self.layers:
            x = layer(x, attention_mask=causal_mask(x.shape[1]), position_ids=position_ids,
                      position_embeddings=position_embeddings)
        return self.norm(x)


def llama_arch(make_arch, layout="half"):
    return make_arch(pos="rope", layout=layout, norm="rmsnorm", ffn="swiglu", attn="gqa", n_kv_heads=2, bias=False,
                    d_model=64, n_heads=8)


@torch.no_grad()
def test_rope_half_table_matches_hf_llama_rotary_embedding(make_arch):
    """HF's (cos, sin) repeat our (seq, head_dim/2) table over both halves (rotate_half pairs i with i + head_dim/2)."""
    arch = llama_arch(make_arch)
    rot = RotaryPositions(arch).rotation(arch.model.max_seq_len)
    x = torch.zeros(1, arch.model.max_seq_len, 64)
    cos, sin = modeling_llama.LlamaRotaryEmbedding(llama_config(arch))(x, torch.arange(arch.model.max_seq_len)[None])
    # HF computes the angles in fp32, we in fp64: measured max |diff| 2.9e-7 over all 64 positions.
    torch.testing.assert_close(cos[0], torch.cat([rot.cos, rot.cos], dim=-1), **TOL)
    torch.testing.assert_close(sin[0], torch.cat([rot.sin, rot.sin], dim=-1), **TOL)


@torch.no_grad()
def test_llama_block_with_gqa_matches_hf_llama_decoder_layer(make_arch, rand_params):
    arch = llama_arch(make_arch)
    ours = rand_params(Block(arch), seed=5, scale=2.0).eval()
    config = llama_config(arch)
    hf = modeling_llama.LlamaDecoderLayer(config, layer_idx=0).eval()
    llama_layer_from_ours(hf, ours)
    x = _x((BATCH, SEQ, 64), seed=6)
    position_ids = torch.arange(SEQ)[None]
    position_embeddings = modeling_llama.LlamaRotaryEmbedding(config)(x, position_ids)
    want = hf(x, attention_mask=causal_mask(SEQ), position_ids=position_ids, position_embeddings=position_embeddings)
    got = ours(x, RotaryPositions(arch).rotation(SEQ))
    # Measured max |diff| 7.9e-6, about 4 fp32 ulps of outputs up to 23 (rtol covers it).
    torch.testing.assert_close(got, want, **TOL)
    # Meta's interleaved pairing is a different layout from HF's rotate_half: caught.
    interleaved = RotaryPositions(llama_arch(make_arch, layout="interleaved")).rotation(SEQ)
    assert _max_err(ours(x, interleaved), want) > 1e-3
    # So is a swap of SwiGLU's gate and up.
    hf.mlp.gate_proj.weight.copy_(ours.ffn.up.weight)
    hf.mlp.up_proj.weight.copy_(ours.ffn.gate.weight)
    swapped = hf(x, attention_mask=causal_mask(SEQ), position_ids=position_ids, position_embeddings=position_embeddings)
    assert _max_err(got, swapped) > 1e-3


@torch.no_grad()
def test_llama_decoder_cached_decode_matches_hf_full_sequence(make_arch, rand_params):
    """Two Llama layers and the final norm: our Decoder's full forward and its token-by-token decode through the
    KV cache (GQA: 2 KV heads for 8 query heads) against HF's full-sequence forward."""
    arch = llama_arch(make_arch)
    ours = rand_params(Decoder(arch), seed=7, scale=2.0).eval()
    hf = LlamaStack(llama_config(arch)).eval()
    for hf_layer, block in zip(hf.layers, ours.blocks, strict=True):
        llama_layer_from_ours(hf_layer, block)
    _copy(hf.norm.weight, ours.norm.weight)
    x = _x((BATCH, SEQ, 64), seed=8)
    want = hf(x)
    # Measured max |diff| 2.8e-6 (full sequence) and 5.0e-6 (cached decode), outputs up to 3.3.
    torch.testing.assert_close(ours(x), want, **TOL)
    got = cached_decode(ours, x, ours.new_cache(BATCH, SEQ), advance=False)
    torch.testing.assert_close(got, want, **TOL)
    # Query head i reads KV head i // 4 in both; reversing the KV heads' order in HF's K projection is caught.
    k = hf.layers[0].self_attn.k_proj.weight
    k.copy_(k.view(2, -1, 64).flip(0).reshape(k.shape))
    assert _max_err(got, hf(x)) > 1e-3


# --- ALiBi / BLOOM -----------------------------------------------------------------------------------------------


def bloom_slopes(n_heads):
    """BLOOM's slopes as ``build_alibi_tensor`` applies them: its bias at key position 1 is ``slope * 1``."""
    alibi = modeling_bloom.build_alibi_tensor(torch.ones(1, 2), n_heads, torch.float32)  # (heads, 1, keys)
    return alibi[:, 0, 1]


def bloom_qkv_from_ours(attn):
    """BLOOM's fused query_key_value: its output viewed as (heads, 3, head_dim), i.e. rows [q_h, k_h, v_h] per head."""
    h, hd = attn.n_heads, attn.head_dim

    def fused(t):  # t: q/k/v weights (h*hd, d) or biases (h*hd,)
        return torch.stack([p.reshape(h, hd, *p.shape[1:]) for p in t], dim=1).reshape(3 * h * hd, *t[0].shape[1:])

    return fused([attn.q.weight, attn.k.weight, attn.v.weight]), fused([attn.q.bias, attn.k.bias, attn.v.bias])


def bloom_attention(hf, x):
    """BloomAttention's output before its residual: it returns ``residual + dropout(dense(...))``, so pass zeros."""
    b, t, _ = x.shape
    alibi = modeling_bloom.build_alibi_tensor(torch.ones(b, t), hf.num_heads, x.dtype)
    out, _ = hf(x, residual=torch.zeros_like(x), alibi=alibi, attention_mask=causal_mask(t))
    return out


@pytest.mark.parametrize("n_heads", [8, 16, 6, 12, 20])
def test_alibi_slopes_equal_bloom_for_every_head_count(make_arch, n_heads):
    ours = ALiBiPositions(make_arch(pos="alibi", d_model=4 * n_heads, n_heads=n_heads))
    # Measured max |diff| 0 for 8 heads (powers of 1/2) and 3e-8 for 16 (BLOOM raises fp32 2^-0.5 to each power);
    # 6, 12 and 20 heads: BLOOM's interleaved sequence for a count that is not a power of two.
    torch.testing.assert_close(ours.slopes, bloom_slopes(n_heads), atol=0, rtol=1e-6)
    # Our bias -m (i - j) and BLOOM's m j differ by -m i: constant along each query's keys, which softmax ignores.
    bias = ours.distance_bias(0, SEQ, SEQ)
    theirs = modeling_bloom.build_alibi_tensor(torch.ones(1, SEQ), n_heads, torch.float32)  # (heads, 1, keys)
    offset = bias - theirs
    # Measured: exact for 8 heads, 4.8e-7 for 16.
    torch.testing.assert_close(offset, offset[..., :1].expand_as(offset), atol=1e-5, rtol=0)


@torch.no_grad()
def test_alibi_attention_and_cached_decode_match_hf_bloom_attention(make_arch, rand_params):
    arch = make_arch(pos="alibi", attn="mha", bias=True, d_model=64, n_heads=8)
    ours = rand_params(CausalSelfAttention(arch), seed=9, scale=2.0).eval()
    score_bias = ALiBiPositions(arch).score_bias()
    config = transformers.BloomConfig(hidden_size=64, n_head=8, n_layer=1, attention_dropout=0.0, hidden_dropout=0.0,
                                      pretraining_tp=1, attn_implementation="eager")
    hf = modeling_bloom.BloomAttention(config, layer_idx=0).eval()
    weight, bias = bloom_qkv_from_ours(ours)
    _copy(hf.query_key_value.weight, weight)
    _copy(hf.query_key_value.bias, bias)
    _copy(hf.dense.weight, ours.out.weight)
    _copy(hf.dense.bias, ours.out.bias)
    x = _x((BATCH, SEQ, 64), seed=10)
    want = bloom_attention(hf, x)
    # Measured max |diff| 2.4e-6 (full sequence) and 4.8e-6 (cached decode), outputs up to 14.
    torch.testing.assert_close(ours(x, None, None, score_bias), want, **TOL)
    cache = KVCache(1, BATCH, 8, SEQ, arch.head_dim)
    got = cached_decode(lambda chunk, kv_cache: ours(chunk, None, kv_cache, score_bias), x, cache, advance=True)
    torch.testing.assert_close(got, want, **TOL)
    # The bias matters: without it the outputs differ.
    assert _max_err(ours(x), want) > 1e-3
    # Fusing Q, K, V as three blocks (GPT-2's c_attn order) instead of per head is caught.
    hf.query_key_value.weight.copy_(torch.cat([ours.q.weight, ours.k.weight, ours.v.weight]))
    hf.query_key_value.bias.copy_(torch.cat([ours.q.bias, ours.k.bias, ours.v.bias]))
    assert _max_err(got, bloom_attention(hf, x)) > 1e-3


# --- QK-norm / Qwen3 ---------------------------------------------------------------------------------------------


@torch.no_grad()
def test_qknorm_attention_and_cached_decode_match_hf_qwen3_attention(make_arch, rand_params):
    config = transformers.Qwen3Config(
        hidden_size=64, num_attention_heads=8, num_key_value_heads=2, head_dim=8, num_hidden_layers=1,
        intermediate_size=128, max_position_embeddings=64, attention_bias=False, attention_dropout=0.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, attn_implementation="eager",
    )
    arch = make_arch(pos="rope", layout="half", attn="gqa", n_kv_heads=2, bias=False, d_model=64, n_heads=8)
    arch = arch.replace(qknorm=QKNormConfig("on", eps=config.rms_norm_eps)).validate()
    ours = rand_params(CausalSelfAttention(arch), seed=11, scale=2.0).eval()
    qk = ours.qk[0]
    hf = modeling_qwen3.Qwen3Attention(config, layer_idx=0).eval()
    names = {"q_proj": ours.q, "k_proj": ours.k, "v_proj": ours.v, "o_proj": ours.out,
             "q_norm": qk.q_norm, "k_norm": qk.k_norm}
    for theirs, mine in names.items():
        _copy(getattr(hf, theirs).weight, mine.weight)
    x = _x((BATCH, SEQ, 64), seed=12, scale=3.0)  # far from unit RMS, so the norms have something to do
    position_embeddings = modeling_qwen3.Qwen3RotaryEmbedding(config)(x, torch.arange(SEQ)[None])
    want, _ = hf(x, position_embeddings=position_embeddings, attention_mask=causal_mask(SEQ))
    positions = RotaryPositions(arch)
    # Measured max |diff| 3.8e-6 (full sequence) and 4.8e-6 (cached decode), outputs up to 39.
    torch.testing.assert_close(ours(x, positions.rotation(SEQ)), want, **TOL)
    cache = KVCache(1, BATCH, 2, SEQ, arch.head_dim)

    def step(chunk, kv_cache):
        return ours(chunk, positions.rotation(chunk.shape[1], kv_cache.pos), kv_cache)

    got = cached_decode(step, x, cache, advance=True)
    torch.testing.assert_close(got, want, **TOL)
    # Swapping q_norm and k_norm weights is caught.
    hf.q_norm.weight.copy_(qk.k_norm.weight)
    hf.k_norm.weight.copy_(qk.q_norm.weight)
    swapped, _ = hf(x, position_embeddings=position_embeddings, attention_mask=causal_mask(SEQ))
    assert _max_err(got, swapped) > 1e-3
