"""ALiBi (``pos=alibi``) against a written-out fp64 reference: the slopes, the bias, MHA/GQA/MQA attention through
prefill, a chunk after a prefix and single-token decode, and the decoder built with it."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ablations.results.variant_labels import variant_label
from blockbench import Step, Work
from components import (
    POSITIONS,
    ArchConfig,
    CausalSelfAttention,
    ConfigError,
    KVCache,
    ModelConfig,
    PosConfig,
    build_decoder,
    count_parameters,
)
from components.positions import ALiBiPositions

ATTN = [("mha", None), ("gqa", 2), ("gqa", 4), ("mqa", None)]
# Prefill 12, a 5-token chunk after that prefix, then 3 single-token decode steps.
STEPS = [(0, 12), (12, 17), (17, 18), (18, 19), (19, 20)]


def _x(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def slopes_ref(n_heads):
    """Press et al.'s ``get_slopes``, written out: a power-of-two count's geometric sequence, else the closest
    power of two's and every other slope of twice that count's."""
    def power_of_two(n):
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    closest = 2 ** int(math.log2(n_heads))
    extra = power_of_two(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(power_of_two(closest) + extra, dtype=torch.float64)


def alibi_attention_ref(attn, x, slopes=None):
    """The layer in fp64 on the whole sequence: softmax(q k^T / sqrt(d) - m_h (i - j), causal) v, then ``out``.
    Query head i reads KV head i // (n_heads // n_kv_heads)."""
    b, t, _ = x.shape
    nh, nkv, hd = attn.n_heads, attn.n_kv_heads, attn.head_dim
    slopes = slopes_ref(nh) if slopes is None else slopes

    def lin(m, z):
        return F.linear(z, m.weight.double(), None if m.bias is None else m.bias.double())

    xd = x.double()
    q = lin(attn.q, xd).view(b, t, nh, hd).transpose(1, 2)
    k = lin(attn.k, xd).view(b, t, nkv, hd).transpose(1, 2)
    v = lin(attn.v, xd).view(b, t, nkv, hd).transpose(1, 2)
    kv_of_head = torch.arange(nh) // (nh // nkv)
    k, v = k[:, kv_of_head], v[:, kv_of_head]
    i = torch.arange(t, dtype=torch.float64)[:, None]
    j = torch.arange(t, dtype=torch.float64)[None, :]
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd) - slopes[:, None, None] * (i - j)
    scores = scores.masked_fill(j > i, float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return lin(attn.out, y.transpose(1, 2).reshape(b, t, nh * hd))


def _layer(make_arch, rand_params, attn, n_kv, seed=0):
    arch = make_arch(pos="alibi", attn=attn, n_kv_heads=n_kv, n_heads=8, d_model=64, n_layers=1)
    return arch, ALiBiPositions(arch), rand_params(CausalSelfAttention(arch), seed=seed, scale=2.0)


def test_registry_name():
    assert POSITIONS.get("alibi") is ALiBiPositions


def test_slopes_for_8_heads_are_powers_of_two(make_arch):
    alibi = ALiBiPositions(make_arch(pos="alibi", n_heads=8, d_model=64))
    assert alibi.slopes.dtype == torch.float32
    assert alibi.slopes.tolist() == [2.0**-h for h in range(1, 9)]


@pytest.mark.parametrize("n_heads", [1, 4, 6, 12])
def test_slopes_follow_the_formula(make_arch, n_heads):
    alibi = ALiBiPositions(make_arch(pos="alibi", n_heads=n_heads, d_model=12 * n_heads))
    torch.testing.assert_close(alibi.slopes, slopes_ref(n_heads).float(), atol=0, rtol=0)


@pytest.mark.parametrize("start,t,s", [(0, 7, 7), (5, 3, 8), (9, 1, 10), (0, 1, 1)])
def test_bias_is_minus_slope_times_distance(make_arch, start, t, s):
    alibi = ALiBiPositions(make_arch(pos="alibi", n_heads=8, d_model=64))
    bias = alibi.score_bias()(start, t, s, torch.device("cpu"))
    assert bias.shape == (8, t, s) and bias.dtype == torch.float32
    i = torch.arange(start, start + t, dtype=torch.float64)[:, None]
    j = torch.arange(s, dtype=torch.float64)[None, :]
    want = -slopes_ref(8)[:, None, None] * (i - j)
    seen = (j <= i).expand(8, t, s)  # the rest is masked: any finite value will do
    torch.testing.assert_close(bias.double()[seen], want[seen], atol=0, rtol=0)
    assert torch.isfinite(bias).all()
    # A step's rows are those of the whole sequence's bias: what decoding through the cache relies on.
    full = alibi.score_bias()(0, start + t, s, torch.device("cpu"))
    torch.testing.assert_close(bias[seen], full[:, start : start + t][seen], atol=0, rtol=0)


def test_no_embedding_no_rotation_no_work(make_arch):
    arch = make_arch(pos="alibi")
    alibi = ALiBiPositions(arch)
    x = _x((2, 6, 32))
    assert torch.equal(alibi.embed(x, 3), x)
    assert alibi.rotation(6, 3) is None
    assert list(alibi.parameters()) == []
    assert ALiBiPositions.work(arch, Step(2, 6, 9)) == Work()
    with pytest.raises(ConfigError, match=r"model\.max_seq_len"):
        alibi.embed(x, arch.model.max_seq_len - 5)


@pytest.mark.parametrize("attn,n_kv", ATTN)
def test_prefill_matches_fp64_reference(make_arch, rand_params, attn, n_kv):
    _, alibi, layer = _layer(make_arch, rand_params, attn, n_kv, seed=1)
    x = _x((2, 20, 64), seed=2)
    got = layer(x, None, None, alibi.score_bias())
    want = alibi_attention_ref(layer, x)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)
    # The test can tell: no bias, or the slopes in the opposite head order, give other outputs.
    assert (layer(x).double() - want).abs().max() > 1e-3
    assert (alibi_attention_ref(layer, x, slopes_ref(8).flip(0)) - want).abs().max() > 1e-3


@pytest.mark.parametrize("attn,n_kv", ATTN)
def test_chunk_after_prefix_and_decode_through_cache_match_reference(make_arch, rand_params, attn, n_kv):
    arch, alibi, layer = _layer(make_arch, rand_params, attn, n_kv, seed=3)
    x = _x((2, 20, 64), seed=4)
    cache = KVCache.for_model(arch, batch_size=2)
    parts = []
    for a, b in STEPS:
        parts.append(layer(x[:, a:b], None, cache, alibi.score_bias()))
        cache.pos = b
    torch.testing.assert_close(torch.cat(parts, dim=1).double(), alibi_attention_ref(layer, x), atol=1e-5, rtol=1e-5)


def _decoder_arch(make_arch, llama_like, attn, n_kv):
    if llama_like:
        return make_arch(pos="alibi", norm="rmsnorm", ffn="swiglu", bias=False, attn=attn, n_kv_heads=n_kv)
    return make_arch(pos="alibi", attn=attn, n_kv_heads=n_kv)


@pytest.mark.parametrize("llama_like", [False, True], ids=["gpt2-block", "llama2-block"])
@pytest.mark.parametrize("attn,n_kv", [("mha", None), ("gqa", 2), ("mqa", None)])
@torch.no_grad()
def test_decoder_full_forward_equals_token_by_token_decode(make_arch, rand_params, llama_like, attn, n_kv):
    arch = _decoder_arch(make_arch, llama_like, attn, n_kv)
    dec = rand_params(build_decoder(arch), seed=5)
    x = _x((2, 11, arch.model.d_model), seed=6)
    full = dec(x)
    cache = dec.new_cache(batch_size=2)
    steps = [dec(x[:, :4], cache)] + [dec(x[:, i : i + 1], cache) for i in range(4, 11)]
    assert cache.pos == 11
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    # and the bias matters at this level too
    plain = build_decoder(arch.with_values(pos="none"))
    plain.load_state_dict(dec.state_dict())
    assert (plain(x) - full).abs().max() > 1e-3


def test_decoder_has_no_position_parameters(make_arch):
    dec = build_decoder(make_arch(pos="alibi"))
    nope = build_decoder(make_arch(pos="none"))
    assert list(dec.positions.parameters()) == [] and list(dec.positions.buffers()) == []
    assert dec.state_dict().keys() == nope.state_dict().keys()
    assert count_parameters(dec) == count_parameters(nope)
    learned = build_decoder(make_arch(pos="learned"))
    assert count_parameters(learned) - count_parameters(dec) == 64 * 32  # max_seq_len x d_model


@pytest.mark.parametrize("d_model,n_heads", [(35, 5), (21, 7), (24, 8), (30, 3)])
def test_any_head_size_is_accepted(d_model, n_heads):
    arch = ArchConfig(model=ModelConfig(d_model=d_model, n_heads=n_heads, max_seq_len=16), pos=PosConfig("alibi"))
    assert arch.validate() is arch
    dec = build_decoder(arch)
    assert dec(_x((1, 5, d_model))).shape == (1, 5, d_model)


def test_slopes_stay_fp32_when_the_model_is_cast(make_arch):
    dec = build_decoder(make_arch(pos="alibi"), dtype=torch.bfloat16)
    assert dec.positions.slopes.dtype == torch.float32
    bias = dec.positions.score_bias()(0, 4, 4, torch.device("cpu"))
    assert bias.dtype == torch.float32
    assert dec(_x((1, 4, 32)).to(torch.bfloat16)).dtype == torch.bfloat16


def test_bias_built_in_inference_mode_serves_training(make_arch, rand_params):
    # The per-device slopes are cached on first use; inference tensors there would break a later backward.
    dec = rand_params(build_decoder(make_arch(pos="alibi")), seed=7)
    x = _x((2, 6, 32), seed=8)
    with torch.inference_mode():
        dec(x)
    dec(x).square().sum().backward()
    assert all(p.grad is not None for p in dec.parameters())


def test_runs_under_a_default_device_context(make_arch):
    # The bias is built on the device attention runs on; the meta device stands in for an accelerator.
    arch = make_arch(pos="alibi")
    with torch.device("meta"):
        dec = build_decoder(arch, device="meta")
        out = dec(torch.empty(1, 5, arch.model.d_model))
    assert out.device.type == "meta"


def test_variant_label():
    assert variant_label(ArchConfig(pos=PosConfig("alibi"))) == "alibi"
