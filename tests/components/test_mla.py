"""MLA (``attn=mla``, DeepSeek-V2) against a written-out fp64 reference; its absorbed path against its reference path
through prefill, a chunk after a prefix and single-token decode; the latent cache's size and contents; its work
against a hand count and ``FlopCounterMode``; parity with Hugging Face's ``DeepseekV2Attention`` (full-rank and
compressed query, and our decode through the latent cache); its checks, labels and result rows."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from blockbench import Step, Work
from components import (
    ATTENTIONS,
    ArchConfig,
    AttnConfig,
    BiasConfig,
    ConfigError,
    KVCache,
    ModelConfig,
    PosConfig,
    RotaryPositions,
    build_decoder,
    count_parameters,
    new_cache,
)
from components.mla import LATENT_NORM_EPS, LatentCache, MultiHeadLatentAttention
from components.positions import build_positions
from components.qknorm import QKNormConfig

D, HEADS = 64, 4  # head_dim 16: by default a latent of 64 and a RoPE key of 8
# Prefill 12, a 5-token chunk after that prefix, then 3 single-token decode steps.
STEPS = [(0, 12), (12, 17), (17, 18), (18, 19), (19, 20)]
POSITIONS = [("learned", "half"), ("rope", "interleaved"), ("rope", "half"), ("alibi", "half"), ("none", "half")]


def mla_arch(pos="rope", layout="interleaved", bias=True, n_layers=1, max_seq_len=64, **sizes) -> ArchConfig:
    return ArchConfig(model=ModelConfig(d_model=D, n_layers=n_layers, n_heads=HEADS, max_seq_len=max_seq_len),
                      pos=PosConfig(pos, layout=layout), bias=BiasConfig("on" if bias else "off"),
                      attn=AttnConfig("mla", **sizes)).validate()


def _x(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# --- the fp64 reference ------------------------------------------------------------------------------------------


def rms_ref(x, weight, eps=LATENT_NORM_EPS):
    return x / torch.sqrt(x.square().mean(dim=-1, keepdim=True) + eps) * weight.double()


def rope_ref(x, positions, layout, theta=10000.0):
    """Rotate the last dimension of x (..., t, r) at ``positions`` in fp64, frequencies theta^(-2i/r): pairs
    (2i, 2i+1) (interleaved, DeepSeek's) or (i, i + r/2) (half)."""
    r = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)
    angles = positions.double()[:, None] * inv_freq
    cos, sin = angles.cos(), angles.sin()
    if layout == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = x[..., : r // 2], x[..., r // 2 :]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def mla_ref(attn, x, arch):
    """MLA on the whole sequence in fp64, written out: queries (full rank, or down, RMSNorm, up), the latent
    RMSNorm(x W_DKV) and the RoPE key x W_KR, each head's K nope and V up-projected from the latent, scores
    ``q_nope·k_nope + q_rope·k_rope`` over sqrt(head_dim + rope), ALiBi's ``-m_h (i - j)`` when pos=alibi, causal
    softmax, each head's V, ``out``."""
    b, t, _ = x.shape
    h, hd = attn.n_heads, attn.head_dim
    lat, r = attn.sizes.kv_lora_rank, attn.sizes.rope_dim

    def lin(m, z):
        return F.linear(z, m.weight.double(), None if m.bias is None else m.bias.double())

    xd = x.double()
    if attn.sizes.q_lora_rank is None:
        q = lin(attn.q, xd)
    else:
        q = lin(attn.q_up, rms_ref(lin(attn.q_down, xd), attn.q_norm.weight))
    q = q.view(b, t, h, hd + r).transpose(1, 2)
    q_nope, q_rope = q[..., :hd], q[..., hd:]
    down = lin(attn.kv_down, xd)
    c_kv, k_rope = rms_ref(down[..., :lat], attn.kv_norm.weight), down[..., lat:]  # (b, t, lat), (b, t, r)
    if arch.pos.name == "rope":
        q_rope, k_rope = rope_ref(q_rope, torch.arange(t), arch.pos.layout), rope_ref(k_rope, torch.arange(t),
                                                                                       arch.pos.layout)
    up = lin(attn.kv_up, c_kv).view(b, t, h, 2 * hd).transpose(1, 2)
    k_nope, v = up[..., :hd], up[..., hd:]
    scores = (q_nope @ k_nope.transpose(-1, -2) + q_rope @ k_rope[:, None].transpose(-1, -2)) / math.sqrt(hd + r)
    distance = torch.arange(t)[:, None] - torch.arange(t)[None, :]
    if arch.pos.name == "alibi":
        slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1, dtype=torch.float64) / h)
        scores = scores - slopes[:, None, None] * distance
    scores = scores.masked_fill(distance < 0, float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return lin(attn.out, y.transpose(1, 2).reshape(b, t, h * hd))


def run_steps(attn, x, arch, absorbed):
    """Our layer over STEPS through a one-layer latent cache: the rows, and the cache."""
    positions = build_positions(arch)
    cache = MultiHeadLatentAttention.new_cache(arch, x.shape[0], STEPS[-1][1], n_layers=1, dtype=x.dtype)
    rows = []
    for start, end in STEPS:
        rotation = positions.rotation(end - start, start)
        rows.append(attn(x[:, start:end], rotation, cache, positions.score_bias(), absorbed=absorbed))
        cache.pos = end
    return torch.cat(rows, dim=1), cache


# --- the module against the reference -----------------------------------------------------------------------------


def test_registered_with_deepseek_proportions_and_its_parameters():
    arch = mla_arch(bias=False)
    attn = ATTENTIONS.get("mla")(arch)
    assert isinstance(attn, MultiHeadLatentAttention)
    s = attn.sizes
    assert (s.head_dim, s.kv_lora_rank, s.rope_dim, s.q_lora_rank) == (16, 64, 8, None)
    assert attn.scale == pytest.approx(1 / math.sqrt(16 + 8))
    shapes = {n: tuple(p.shape) for n, p in attn.named_parameters()}
    assert shapes == {"q.weight": (HEADS * 24, D), "kv_down.weight": (72, D), "kv_norm.weight": (64,),
                      "kv_up.weight": (HEADS * 32, 64), "out.weight": (D, HEADS * 16)}
    compressed = MultiHeadLatentAttention(mla_arch(bias=True, q_lora_rank=24, kv_lora_rank=32, qk_rope_head_dim=4))
    shapes = {n: tuple(p.shape) for n, p in compressed.named_parameters()}
    # A bias on the down-projections and the output; none on the up-projections from a normalised latent.
    assert shapes == {"q_down.weight": (24, D), "q_down.bias": (24,), "q_norm.weight": (24,),
                      "q_up.weight": (HEADS * 20, 24), "kv_down.weight": (36, D), "kv_down.bias": (36,),
                      "kv_norm.weight": (32,), "kv_up.weight": (HEADS * 32, 32), "out.weight": (D, HEADS * 16),
                      "out.bias": (D,)}
    # DeepSeek-V2's own proportions at its 128 per head: 512 and 64.
    big = MultiHeadLatentAttention(ArchConfig(model=ModelConfig(d_model=1024, n_heads=8), attn=AttnConfig("mla")))
    assert (big.sizes.kv_lora_rank, big.sizes.rope_dim) == (512, 64)


@pytest.mark.parametrize("q_lora_rank", [None, 24], ids=["full-rank-query", "compressed-query"])
def test_bias_on_is_deepseeks_attention_bias_never_the_full_rank_querys(q_lora_rank):
    """``bias=on`` biases what DeepSeek-V2's ``attention_bias`` does: the down-projections (``q_a_proj``,
    ``kv_a_proj_with_mqa``) and the output; its full-rank ``q_proj`` is ``bias=False`` whatever the flag. The work
    counts exactly the parameters built, on both paths."""
    want = {True: {"kv_down", "out"} | ({"q_down"} if q_lora_rank else set()), False: set()}
    for bias in (True, False):
        arch = mla_arch(bias=bias, q_lora_rank=q_lora_rank)
        attn = MultiHeadLatentAttention(arch)
        assert {n.rpartition(".")[0] for n, _ in attn.named_parameters() if n.endswith(".bias")} == want[bias]
        for step in (Step(1, 1, 1), Step(2, 20, 20)):  # absorbed, reference
            assert MultiHeadLatentAttention.work(arch, step).weights == count_parameters(attn)


@pytest.mark.parametrize("q_lora_rank", [None, 24])
@pytest.mark.parametrize("pos,layout", POSITIONS, ids=[f"{p}-{lo}" for p, lo in POSITIONS])
@pytest.mark.parametrize("absorbed", [True, False], ids=["absorbed", "reference"])
def test_both_paths_equal_the_fp64_reference(rand_params, pos, layout, q_lora_rank, absorbed):
    arch = mla_arch(pos, layout, q_lora_rank=q_lora_rank)
    attn = rand_params(MultiHeadLatentAttention(arch), seed=1, scale=2.0)
    positions = build_positions(arch)
    x = _x((2, 10, D), seed=2)
    got = attn(x, positions.rotation(10), None, positions.score_bias(), absorbed=absorbed)
    want = mla_ref(attn, x, arch)
    torch.testing.assert_close(got, want.float(), atol=1e-5, rtol=1e-5)
    if pos == "rope":  # the other pairing is a different layout: caught
        other = "half" if layout == "interleaved" else "interleaved"
        assert (mla_ref(attn, x, mla_arch(pos, other, q_lora_rank=q_lora_rank)).float() - got).abs().max() > 1e-3


@torch.no_grad()
@pytest.mark.parametrize("q_lora_rank", [None, 24])
@pytest.mark.parametrize("pos,layout", POSITIONS, ids=[f"{p}-{lo}" for p, lo in POSITIONS])
def test_absorbed_and_reference_paths_agree_through_the_cache_in_fp64(rand_params, pos, layout, q_lora_rank):
    """Prefill, a chunk after the prefix and single-token decode, in fp64: the two paths give the same rows and
    write the same cache, and the rows are the full sequence's (RoPE's tables and rotation are fp32: 1e-5 there)."""
    arch = mla_arch(pos, layout, q_lora_rank=q_lora_rank)
    attn = rand_params(MultiHeadLatentAttention(arch), seed=3, scale=2.0).double()
    x = _x((2, 20, D), seed=4, dtype=torch.float64)
    absorbed, absorbed_cache = run_steps(attn, x, arch, absorbed=True)
    reference, reference_cache = run_steps(attn, x, arch, absorbed=False)
    torch.testing.assert_close(absorbed, reference, atol=1e-12, rtol=1e-12)
    assert torch.equal(absorbed_cache.latent, reference_cache.latent)
    tol = 1e-5 if pos == "rope" else 1e-12
    torch.testing.assert_close(absorbed, mla_ref(attn, x, arch), atol=tol, rtol=tol)


def test_short_steps_take_the_absorbed_path_and_long_prefills_the_reference(monkeypatch, rand_params):
    arch = mla_arch()
    attn = rand_params(MultiHeadLatentAttention(arch), seed=5)
    taken = []
    for name in ("_absorbed", "_expanded"):
        original = getattr(MultiHeadLatentAttention, name)
        monkeypatch.setattr(MultiHeadLatentAttention, name,
                            lambda self, *a, _f=original, _n=name: taken.append(_n) or _f(self, *a))
    rope = RotaryPositions(arch)
    for t in (1, 16, 17, 40):
        attn(_x((1, t, D)), rope.rotation(t))
    assert taken == ["_absorbed", "_absorbed", "_expanded", "_expanded"]


# --- the latent cache ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("sizes,width", [({}, 64 + 8), ({"kv_lora_rank": 40, "qk_rope_head_dim": 6}, 46),
                                         ({"q_lora_rank": 24}, 72)])
def test_latent_cache_holds_latent_and_rope_key_per_token_and_layer(sizes, width, dtype):
    arch = mla_arch(n_layers=3, max_seq_len=20, **sizes)
    cache = new_cache(arch, batch_size=2, dtype=dtype)  # the module function dispatches to the class's new_cache
    assert isinstance(cache, LatentCache) and cache.latent.dtype == dtype
    elem = torch.empty((), dtype=dtype).element_size()
    assert cache.latent.shape == (3, 2, 20, width)
    assert cache.nbytes == 3 * 2 * 20 * width * elem
    assert cache.bytes_per_token() == 3 * 2 * width * elem  # kv_lora_rank + qk_rope_head_dim per token and layer
    # Against MHA at the same size: 2 x 4 heads x 16 = 128 values per token and layer.
    mha = KVCache.for_model(arch.replace(attn=AttnConfig("mha")), batch_size=2, dtype=dtype)
    assert mha.bytes_per_token() * width == cache.bytes_per_token() * 128


@torch.no_grad()
def test_the_cache_holds_the_normalised_latent_and_the_rotated_rope_key(rand_params):
    arch = mla_arch()
    attn = rand_params(MultiHeadLatentAttention(arch), seed=6).double()
    x = _x((2, 7, D), seed=7, dtype=torch.float64)
    cache = MultiHeadLatentAttention.new_cache(arch, 2, 10, n_layers=1, dtype=torch.float64)
    attn(x, RotaryPositions(arch).rotation(7), cache)
    down = F.linear(x, attn.kv_down.weight, attn.kv_down.bias)
    torch.testing.assert_close(cache.latent[0, :, :7, :64], rms_ref(down[..., :64], attn.kv_norm.weight))
    torch.testing.assert_close(cache.latent[0, :, :7, 64:], rope_ref(down[..., 64:], torch.arange(7), "interleaved"),
                               atol=1e-6, rtol=1e-6)
    assert not cache.latent[0, :, 7:].any()


def test_latent_cache_update_clone_randomize_and_overflow():
    cache = LatentCache(2, 1, 5, 3)
    rows = _x((1, 3, 3), 1)
    assert torch.equal(cache.update(1, rows), rows) and not cache.latent[0].any()
    cache.pos = 3
    more = _x((1, 2, 3), 2)
    assert torch.equal(cache.update(1, more), torch.cat((rows, more), dim=1))
    copy = cache.clone()
    assert copy.pos == 3 and torch.equal(copy.latent, cache.latent)
    assert copy.latent.data_ptr() != cache.latent.data_ptr()
    copy.randomize_()
    assert copy.tensors()[0].abs().sum() > 0 and not torch.equal(copy.latent, cache.latent)
    cache.pos = 4
    with pytest.raises(ValueError, match="latent cache holds 5"):
        cache.update(0, more)


@torch.no_grad()
@pytest.mark.parametrize("q_lora_rank", [None, 24])
def test_decoder_decode_through_the_latent_cache_reproduces_the_full_sequence(rand_params, q_lora_rank):
    arch = mla_arch(n_layers=2, q_lora_rank=q_lora_rank)
    dec = rand_params(build_decoder(arch), seed=8, scale=1.5).eval()
    x = _x((2, 20, D), seed=9)
    full = dec(x)
    cache = dec.new_cache(2, 20)
    assert isinstance(cache, LatentCache) and cache.latent.shape == (2, 2, 20, 72)
    rows = torch.cat([dec(x[:, start:end], cache) for start, end in STEPS], dim=1)
    assert cache.pos == 20
    torch.testing.assert_close(rows, full, atol=2e-5, rtol=1e-5)
    cache.pos = 19  # rewinding and repeating a step
    torch.testing.assert_close(dec(x[:, 19:], cache), full[:, 19:], atol=2e-5, rtol=1e-5)


# --- work ---------------------------------------------------------------------------------------------------------


def test_work_of_a_decode_step_by_hand():
    """Absorbed (one new token per sequence), compressed query, biases: B=2 sequences over S=9 keys."""
    arch = mla_arch(bias=True, q_lora_rank=24)
    B, T, S, d, h, hd, lat, r, ql = 2, 1, 9, D, HEADS, 16, 64, 8, 24
    n = B * T
    want = Work(
        # q_down, q_up, kv_down, out; q_nope @ W_UK and o_lat @ W_UV^T per head
        linear_flops=2 * n * (d * ql + ql * h * (hd + r) + d * (lat + r) + h * hd * d) + 2 * 2 * n * h * hd * lat,
        # scores over latent + RoPE key, values over the latent: per head, query and key
        attention_flops=2 * B * h * T * S * (lat + r) + 2 * B * h * T * S * lat,
        weights=(d * ql + ql) + ql + ql * h * (hd + r) + (d * (lat + r) + lat + r) + lat + 2 * h * hd * lat
        + (h * hd * d + d),
        # inputs read and outputs written; kv_down's output is the cache write
        linear_activations=n * (d + ql) + n * (ql + h * (hd + r)) + n * d + n * (h * hd + d)
        + n * h * (hd + lat) + n * h * (lat + hd),
        norm_activations=2 * n * ql + 2 * n * lat,
        attention_activations=n * h * (lat + r) + n * h * lat,
        kv_read=B * S * (lat + r), kv_write=n * (lat + r),
    )
    assert MultiHeadLatentAttention.work(arch, Step(B, T, S)) == want
    assert want.weights == count_parameters(MultiHeadLatentAttention(arch))


def test_work_of_a_long_prefill_by_hand():
    """The reference path (20 > FOLD_MAX_QUERIES new tokens), full-rank query, no biases."""
    arch = mla_arch(bias=False)
    B, T, d, h, hd, lat, r = 2, 20, D, HEADS, 16, 64, 8
    n = B * T
    want = Work(
        # q, kv_down, out; kv_up over every key
        linear_flops=2 * n * (d * h * (hd + r) + d * (lat + r) + h * hd * d) + 2 * n * lat * 2 * h * hd,
        attention_flops=2 * B * h * T * T * (hd + r) + 2 * B * h * T * T * hd,
        weights=d * h * (hd + r) + d * (lat + r) + lat + lat * 2 * h * hd + h * hd * d,
        linear_activations=n * (d + h * (hd + r)) + n * d + n * (h * hd + d) + n * 2 * h * hd,
        norm_activations=2 * n * lat,
        # reads Q, each head's K (nope + the shared RoPE key) and V, writes the output
        attention_activations=n * h * (hd + r) + n * h * (hd + r + hd) + n * h * hd,
        kv_read=n * (lat + r), kv_write=n * (lat + r),
    )
    assert MultiHeadLatentAttention.work(arch, Step(B, T, T)) == want
    assert want.weights == count_parameters(MultiHeadLatentAttention(arch))


@pytest.mark.parametrize("q_lora_rank", [None, 24])
@pytest.mark.parametrize("t,context", [(1, 8), (5, 0), (3, 6), (20, 0), (18, 4)])
def test_work_flops_match_the_flop_counter(q_lora_rank, t, context):
    """Every matmul FLOP counted by torch (SDPA under its math backend, whose matmuls the counter sees), and the
    projections' alone (the ``nn.Linear`` submodules) against the ``linear`` parts of ``work``."""
    arch = mla_arch(q_lora_rank=q_lora_rank)
    attn = MultiHeadLatentAttention(arch)
    cache = attn.new_cache(arch, 2, 32, n_layers=1)
    cache.pos = context
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        attn(_x((2, t, D)), RotaryPositions(arch).rotation(t, context), cache)
    work = MultiHeadLatentAttention.work(arch, Step(2, t, context + t))
    assert counter.get_total_flops() == work.flops
    by_module = {name: sum(ops.values()) for name, ops in counter.get_flop_counts().items()}
    linears = sum(v for name, v in by_module.items() if name.startswith("MultiHeadLatentAttention."))
    n, h, hd, lat = 2 * t, HEADS, 16, 64
    absorbed = 2 * 2 * n * h * hd * lat if t <= 16 else 0  # the per-head products outside any nn.Linear
    assert linears + absorbed == work.linear_flops


# --- Hugging Face's DeepseekV2Attention ---------------------------------------------------------------------------


def deepseek_attention(arch, bias):
    transformers = pytest.importorskip("transformers")
    from transformers.models.deepseek_v2 import modeling_deepseek_v2

    s = MultiHeadLatentAttention(arch).sizes
    config = transformers.DeepseekV2Config(
        hidden_size=D, num_attention_heads=HEADS, num_key_value_heads=HEADS, kv_lora_rank=s.kv_lora_rank,
        q_lora_rank=s.q_lora_rank, qk_nope_head_dim=s.head_dim, qk_rope_head_dim=s.rope_dim, v_head_dim=s.head_dim,
        max_position_embeddings=arch.model.max_seq_len, num_hidden_layers=1, vocab_size=32, intermediate_size=32,
        rope_parameters={"rope_type": "default", "rope_theta": arch.pos.theta}, attention_bias=bias,
        attention_dropout=0.0, attn_implementation="eager",
    )
    hf = modeling_deepseek_v2.DeepseekV2Attention(config, layer_idx=0).eval()
    return hf, modeling_deepseek_v2.DeepseekV2RotaryEmbedding(config)


def deepseek_from_ours(hf, ours):
    """Our MLA into DeepseekV2Attention: the same nn.Linear layouts (each head's query nope then rope; kv_up per head
    K nope then V), only renamed."""
    names = {"kv_down": "kv_a_proj_with_mqa", "kv_norm": "kv_a_layernorm", "kv_up": "kv_b_proj", "out": "o_proj",
             "q": "q_proj", "q_down": "q_a_proj", "q_norm": "q_a_layernorm", "q_up": "q_b_proj"}
    src = {f"{names[k.split('.')[0]]}.{k.split('.')[1]}": v for k, v in ours.state_dict().items()}
    assert set(src) == set(hf.state_dict())
    hf.load_state_dict(src)


def causal_mask(t):
    """HF's eager additive mask (1, 1, t, t): 0 where query i sees key j <= i, else fp32's min."""
    seen = torch.ones(t, t, dtype=torch.bool).tril()
    return torch.zeros(1, 1, t, t).masked_fill(~seen, torch.finfo(torch.float32).min)


@torch.no_grad()
@pytest.mark.parametrize("q_lora_rank,bias", [(None, False), (None, True), (24, True)],
                         ids=["full-rank-query", "full-rank-query-bias", "compressed-query-bias"])
def test_matches_hf_deepseek_v2_attention_and_decodes_through_the_latent_cache(rand_params, q_lora_rank, bias):
    """HF rotates interleaved pairs (``view_as_complex`` on (2i, 2i+1)): pos.layout=interleaved. With
    ``attention_bias`` its full-rank ``q_proj`` still has no bias, and ours neither (``deepseek_from_ours`` loads every
    tensor by name, so a query bias on one side only fails there)."""
    arch = mla_arch("rope", "interleaved", bias=bias, q_lora_rank=q_lora_rank)
    ours = rand_params(MultiHeadLatentAttention(arch), seed=10, scale=2.0).eval()
    hf, rotary = deepseek_attention(arch, bias)
    deepseek_from_ours(hf, ours)
    t = 12
    x = _x((2, t, D), seed=11)
    want, _ = hf(x, attention_mask=causal_mask(t), position_embeddings=rotary(x, torch.arange(t)[None]))
    rope = RotaryPositions(arch)
    # Measured max |diff| 5.8e-6 (absorbed), 4.3e-6 (reference) and 8.6e-6 (cached decode), outputs up to 14.
    torch.testing.assert_close(ours(x, rope.rotation(t)), want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours(x, rope.rotation(t), absorbed=False), want, atol=1e-5, rtol=1e-5)
    # Our decode: a prefill of 5, then one token at a time through the latent cache, against HF's full sequence.
    cache = ours.new_cache(arch, 2, t, n_layers=1)
    rows = []
    for start, end in [(0, 5), *((i, i + 1) for i in range(5, t))]:
        rows.append(ours(x[:, start:end], rope.rotation(end - start, start), cache))
        cache.pos = end
    torch.testing.assert_close(torch.cat(rows, dim=1), want, atol=1e-5, rtol=1e-5)
    # The other pairing (rotate_half) is a different layout: caught.
    half = RotaryPositions(mla_arch("rope", "half", bias=bias, q_lora_rank=q_lora_rank)).rotation(t)
    assert (ours(x, half) - want).abs().max() > 1e-3
    # So is a swap of K nope and V inside each head's rows of kv_b_proj.
    w = hf.kv_b_proj.weight
    w.copy_(w.view(HEADS, 2, 16, -1).flip(1).reshape(w.shape))
    swapped, _ = hf(x, attention_mask=causal_mask(t), position_embeddings=rotary(x, torch.arange(t)[None]))
    assert (ours(x, rope.rotation(t)) - swapped).abs().max() > 1e-3


# --- the declaration: checks, labels, rows ------------------------------------------------------------------------


def test_mla_checks_its_settings_and_refuses_qknorm_and_a_window():
    base = mla_arch()
    for change, message in [
        (dict(kv_lora_rank=0), r"attn\.kv_lora_rank=0 must be a positive integer \(the latent's width"),
        (dict(qk_rope_head_dim=3), r"attn\.qk_rope_head_dim=3 must be even"),
        (dict(q_lora_rank=-1), r"attn\.q_lora_rank=-1 must be a positive integer"),
        (dict(n_kv_heads=2), r"attn\.n_kv_heads=2 contradicts attn=mla"),
        (dict(window=8), r"attn\.window=8 is not supported with attn=mla"),
    ]:
        with pytest.raises(ConfigError, match=message):
            base.replace(attn=AttnConfig("mla", **change)).validate()
    with pytest.raises(ConfigError, match=r"qknorm=on is not supported with attn=mla"):
        base.replace(qknorm=QKNormConfig("on")).validate()
    with pytest.raises(ConfigError, match=r"attn\.kv_lora_rank=64 is an attn=mla setting; attn=mha"):
        base.replace(attn=AttnConfig("mha", kv_lora_rank=64)).validate()
