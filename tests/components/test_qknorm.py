"""QK-norm (``qknorm=on``) against a written-out fp64 reference: per-head RMSNorm of Q and K before the rotation,
for MHA/GQA/MQA through prefill, a chunk after a prefix and single-token decode; ``qknorm=off`` changes nothing;
its parameters, its check, its work and its variant names."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ablations.results.variant_labels import variant_label
from blockbench import Step, Work
from components import (
    ArchConfig,
    CausalSelfAttention,
    ConfigError,
    KVCache,
    ModelConfig,
    RotaryPositions,
    build_decoder,
    count_parameters,
)
from components.presets import llama2_block
from components.qknorm import QKNORMS, QKNorm, QKNormConfig

ON, OFF = QKNormConfig("on"), QKNormConfig("off")
ATTN = [("mha", None), ("gqa", 2), ("mqa", None)]
# Prefill 12, a 5-token chunk after that prefix, then 3 single-token decode steps.
STEPS = [(0, 12), (12, 17), (17, 18), (18, 19), (19, 20)]


def _x(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def rms_ref(x, weight, eps):
    """RMSNorm over the last dimension in fp64."""
    x = x.double()
    return x / torch.sqrt(x.square().mean(dim=-1, keepdim=True) + eps) * weight.double()


def rope_ref(x, theta=10000.0):
    """HF's rotate_half RoPE in fp64 for positions 0..seq-1 of x (batch, heads, seq, head_dim)."""
    hd, t = x.shape[-1], x.shape[-2]
    inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    angles = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def qknorm_attention_ref(attn, x, rope, norm=True):
    """The layer in fp64 on the whole sequence: project, RMS-normalise each head's q and k with the module's
    weights, rotate (RoPE) or not, causal softmax(q k^T / sqrt(d)) v with query head i reading KV head
    i // (n_heads // n_kv_heads), then ``out``."""
    b, t, _ = x.shape
    nh, nkv, hd = attn.n_heads, attn.n_kv_heads, attn.head_dim

    def lin(m, z):
        return F.linear(z, m.weight.double(), None if m.bias is None else m.bias.double())

    xd = x.double()
    q = lin(attn.q, xd).view(b, t, nh, hd).transpose(1, 2)
    k = lin(attn.k, xd).view(b, t, nkv, hd).transpose(1, 2)
    v = lin(attn.v, xd).view(b, t, nkv, hd).transpose(1, 2)
    if norm:
        qk = attn.qk[0]
        q, k = rms_ref(q, qk.q_norm.weight, qk.q_norm.eps), rms_ref(k, qk.k_norm.weight, qk.k_norm.eps)
    if rope:
        q, k = rope_ref(q), rope_ref(k)
    kv_of_head = torch.arange(nh) // (nh // nkv)
    k, v = k[:, kv_of_head], v[:, kv_of_head]
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return lin(attn.out, y.transpose(1, 2).reshape(b, t, nh * hd))


def _layer(make_arch, rand_params, attn, n_kv, rope, seed=0):
    arch = make_arch(attn=attn, n_kv_heads=n_kv, n_heads=8, d_model=64, n_layers=1,
                   pos="rope" if rope else "learned").replace(qknorm=ON)
    layer = rand_params(CausalSelfAttention(arch), seed=seed, scale=2.0)
    return arch, (RotaryPositions(arch) if rope else None), layer


def test_registry_names():
    assert QKNORMS.get("off") is None
    assert QKNORMS.get("on") is QKNorm


def test_module_normalises_each_head_with_shared_weights(make_arch, rand_params):
    arch = make_arch(n_heads=4, d_model=32, attn="gqa", n_kv_heads=2).replace(qknorm=QKNormConfig("on", eps=1e-3))
    qk = rand_params(QKNorm(arch), seed=1)
    assert qk.q_norm.weight.shape == qk.k_norm.weight.shape == (arch.head_dim,)
    assert not torch.equal(qk.q_norm.weight, qk.k_norm.weight)
    q, k = _x((2, 4, 5, 8), seed=2) * 3, _x((2, 2, 5, 8), seed=3) * 0.1
    got_q, got_k = qk(q, k)
    torch.testing.assert_close(got_q.double(), rms_ref(q, qk.q_norm.weight, 1e-3), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(got_k.double(), rms_ref(k, qk.k_norm.weight, 1e-3), atol=1e-6, rtol=1e-6)


def test_bf16_input_keeps_its_dtype(make_arch):
    qk = QKNorm(make_arch().replace(qknorm=ON))
    q, k = _x((1, 4, 3, 8), seed=4), _x((1, 4, 3, 8), seed=5)
    got_q, got_k = qk.to(torch.bfloat16)(q.bfloat16(), k.bfloat16())
    assert got_q.dtype == got_k.dtype == torch.bfloat16
    torch.testing.assert_close(got_q.double(), rms_ref(q, torch.ones(8), 1e-6), atol=2e-2, rtol=2**-7)


@pytest.mark.parametrize("rope", [False, True], ids=["no-rotation", "rope"])
@pytest.mark.parametrize("attn,n_kv", ATTN)
def test_prefill_matches_fp64_reference(make_arch, rand_params, attn, n_kv, rope):
    _, positions, layer = _layer(make_arch, rand_params, attn, n_kv, rope, seed=6)
    x = _x((2, 20, 64), seed=7)
    rotation = positions.rotation(20, 0) if rope else None
    want = qknorm_attention_ref(layer, x, rope)
    torch.testing.assert_close(layer(x, rotation).double(), want, atol=1e-5, rtol=1e-5)
    # The test can tell: the reference without the norm, or without the rotation, gives other outputs.
    assert (qknorm_attention_ref(layer, x, rope, norm=False) - want).abs().max() > 1e-3
    if rope:
        assert (qknorm_attention_ref(layer, x, False) - want).abs().max() > 1e-3


@pytest.mark.parametrize("rope", [False, True], ids=["no-rotation", "rope"])
@pytest.mark.parametrize("attn,n_kv", ATTN)
def test_chunk_after_prefix_and_decode_through_cache_match_reference(make_arch, rand_params, attn, n_kv, rope):
    arch, positions, layer = _layer(make_arch, rand_params, attn, n_kv, rope, seed=8)
    x = _x((2, 20, 64), seed=9)
    cache = KVCache.for_model(arch, batch_size=2)
    parts = []
    for a, b in STEPS:
        rotation = positions.rotation(b - a, a) if rope else None
        parts.append(layer(x[:, a:b], rotation, cache))
        cache.pos = b
    torch.testing.assert_close(torch.cat(parts, dim=1).double(), qknorm_attention_ref(layer, x, rope),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("llama_like", [False, True], ids=["gpt2-block", "llama2-block"])
@pytest.mark.parametrize("attn,n_kv", ATTN)
@torch.no_grad()
def test_decoder_full_forward_equals_token_by_token_decode(make_arch, rand_params, llama_like, attn, n_kv):
    if llama_like:
        arch = make_arch(pos="rope", norm="rmsnorm", ffn="swiglu", bias=False, attn=attn, n_kv_heads=n_kv)
    else:
        arch = make_arch(attn=attn, n_kv_heads=n_kv)
    arch = arch.replace(qknorm=ON)
    dec = rand_params(build_decoder(arch), seed=10)
    x = _x((2, 11, arch.model.d_model), seed=11)
    full = dec(x)
    cache = dec.new_cache(batch_size=2)
    steps = [dec(x[:, :4], cache)] + [dec(x[:, i : i + 1], cache) for i in range(4, 11)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("attn,n_kv", ATTN)
@torch.no_grad()
def test_off_builds_nothing_and_changes_nothing(make_arch, rand_params, attn, n_kv):
    base = make_arch(pos="rope", attn=attn, n_kv_heads=n_kv)  # qknorm not named: its default
    assert base.qknorm == OFF
    before = rand_params(build_decoder(base), seed=12)
    off = build_decoder(base.replace(qknorm=QKNormConfig("off")))
    assert off.state_dict().keys() == before.state_dict().keys()
    assert not any(".qk." in name for name in off.state_dict())
    assert all(len(block.attn.qk) == 0 for block in off.blocks)
    assert count_parameters(off) == count_parameters(before)
    off.load_state_dict(before.state_dict())
    x = _x((2, 9, 32), seed=13)
    assert torch.equal(off(x), before(x))


@pytest.mark.parametrize("attn,n_kv", ATTN)
def test_on_adds_two_head_dim_weights_per_layer_initialised_to_one(make_arch, attn, n_kv):
    arch = make_arch(attn=attn, n_kv_heads=n_kv, n_layers=3)
    off, on = build_decoder(arch), build_decoder(arch.replace(qknorm=ON))
    assert count_parameters(on) - count_parameters(off) == 3 * 2 * arch.head_dim
    added = {name: p for name, p in on.named_parameters() if ".qk." in name}
    assert sorted(added) == sorted(f"blocks.{i}.attn.qk.0.{w}_norm.weight" for i in range(3) for w in "qk")
    assert all(torch.equal(p, torch.ones(arch.head_dim)) for p in added.values())


def test_norm_weights_get_gradients(make_arch, rand_params):
    dec = rand_params(build_decoder(make_arch(pos="rope").replace(qknorm=ON)), seed=14)
    dec(_x((2, 6, 32), seed=15)).square().sum().backward()
    for block in dec.blocks:
        qk = block.attn.qk[0]
        assert qk.q_norm.weight.grad.abs().sum() > 0 and qk.k_norm.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("eps", [0.0, -1e-6])
def test_non_positive_eps_is_refused(eps):
    with pytest.raises(ConfigError, match=r"qknorm\.eps"):
        ArchConfig(model=ModelConfig(d_model=64, n_heads=4), qknorm=QKNormConfig("on", eps=eps)).validate()


@pytest.mark.parametrize("attn,n_kv", ATTN)
@pytest.mark.parametrize("step", [Step(2, 16, 16), Step(3, 1, 40), Step(1, 5, 12)])
def test_attention_work_adds_exactly_the_norms(make_arch, attn, n_kv, step):
    arch = make_arch(attn=attn, n_kv_heads=n_kv, n_heads=8, d_model=64)
    on = arch.replace(qknorm=ON)
    hd, h, kv = arch.head_dim, arch.model.n_heads, arch.n_kv_heads
    # Q and K read and written once, both weight vectors read.
    norms = Work(weights=2 * hd, norm_activations=2 * step.tokens * (h + kv) * hd)
    assert QKNorm.work(on, step) == norms
    assert CausalSelfAttention.work(on, step) == CausalSelfAttention.work(arch, step) + norms


def test_variant_labels():
    assert variant_label(ArchConfig(qknorm=ON)) == "qknorm"
    llama2 = llama2_block(ModelConfig(n_heads=12, tie_embeddings=False), kv_heads=4)
    assert variant_label(llama2) == "llama2"
    assert variant_label(llama2.replace(qknorm=ON)) == "llama2+qknorm"
