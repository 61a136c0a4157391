"""MHA/GQA/MQA against an explicit softmax(QK^T/sqrt(d) + mask) V reference, the KV cache and the SDPA mask."""

from __future__ import annotations

import math

import pytest
import torch

from components import ATTENTIONS, CausalSelfAttention, KVCache, RotaryPositions, kernels
from components.attention import AttnConfig
from components.config import ConfigError
from components.kernels import folded_sdpa, reference_sdpa, sdpa
from components.kv_heads import ONE_IN_ALL, KVHeads, resolve_kv_heads
from components.positions import apply_rotation
from tests.temporary_choice import kept


def _x(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def manual_attention(q, k, v, start=0):
    """q (b, h, t, d), k/v (b, h, s, d) with the same head count; query i sits at position start + i."""
    t, s = q.shape[2], k.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    qpos = torch.arange(start, start + t)[:, None]
    kpos = torch.arange(s)[None, :]
    scores = scores.masked_fill(kpos > qpos, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def reference_attention(attn, x, rotation=None, tile=False):
    """The layer written out: query head i reads KV head i // (n_heads // n_kv_heads), K/V copied per head."""
    b, t, _ = x.shape
    nh, nkv, hd = attn.n_heads, attn.n_kv_heads, attn.head_dim
    q = torch.nn.functional.linear(x, attn.q.weight, attn.q.bias).view(b, t, nh, hd).transpose(1, 2)
    k = torch.nn.functional.linear(x, attn.k.weight, attn.k.bias).view(b, t, nkv, hd).transpose(1, 2)
    v = torch.nn.functional.linear(x, attn.v.weight, attn.v.bias).view(b, t, nkv, hd).transpose(1, 2)
    if rotation is not None:
        q, k = apply_rotation(q, rotation), apply_rotation(k, rotation)
    group = nh // nkv
    if tile:  # the wrong mapping (head i -> KV head i % n_kv_heads), to show the test can tell
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    else:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    y = manual_attention(q, k, v)
    return torch.nn.functional.linear(y.transpose(1, 2).reshape(b, t, nh * hd), attn.out.weight, attn.out.bias)


def test_registry_names():
    for name in ("mha", "gqa", "mqa"):
        assert issubclass(ATTENTIONS.get(name), CausalSelfAttention)


def test_kv_heads_follow_the_registered_class_not_the_name():
    """A value's KV heads come from its class's declared rule; a class without one (a plugin's) takes
    ``attn.n_kv_heads`` if set, else one per query head."""

    class OneKV(CausalSelfAttention):
        kv_heads_rule = KVHeads(ONE_IN_ALL, why="which has 1", instead="leave it null")

    class Undeclared(CausalSelfAttention):
        pass

    with kept():  # two values for this test: registered into the frozen catalog and taken back
        ATTENTIONS.add("one_kv", OneKV)
        ATTENTIONS.add("undeclared", Undeclared)
        assert resolve_kv_heads(AttnConfig("one_kv"), 8) == 1
        with pytest.raises(ConfigError, match=r"^attn\.n_kv_heads=2 contradicts attn=one_kv \(which has 1\); leave "):
            resolve_kv_heads(AttnConfig("one_kv", 2), 8)
        assert resolve_kv_heads(AttnConfig("undeclared"), 8) == 8
        assert resolve_kv_heads(AttnConfig("undeclared", 2), 8) == 2


def test_gqa_with_all_kv_heads_is_exactly_mha(make_arch, rand_params):
    mha = rand_params(CausalSelfAttention(make_arch(attn="mha")), seed=1)
    gqa = CausalSelfAttention(make_arch(attn="gqa", n_kv_heads=4))
    gqa.load_state_dict(mha.state_dict())
    x = _x((2, 9, 32), seed=2)
    assert torch.equal(gqa(x), mha(x))


@pytest.mark.parametrize("attn,n_kv", [("mha", None), ("gqa", 2), ("gqa", 4), ("mqa", None)])
@pytest.mark.parametrize("rope", [False, True])
def test_attention_equals_repeat_interleave_reference(make_arch, rand_params, attn, n_kv, rope):
    arch = make_arch(attn=attn, n_kv_heads=n_kv, n_heads=8, d_model=64, pos="rope" if rope else "learned")
    layer = rand_params(CausalSelfAttention(arch), seed=3, scale=2.0)
    expect_kv = {"mha": 8, "mqa": 1}.get(attn, n_kv)
    assert layer.n_kv_heads == expect_kv
    assert layer.k.weight.shape[0] == layer.v.weight.shape[0] == expect_kv * arch.head_dim
    assert layer.k.bias.shape[0] == expect_kv * arch.head_dim
    x = _x((2, 10, 64), seed=4)
    rotation = RotaryPositions(arch).rotation(10, 0) if rope else None
    got = layer(x, rotation)
    torch.testing.assert_close(got, reference_attention(layer, x, rotation), atol=1e-5, rtol=1e-5)
    if 1 < expect_kv < 8:
        assert (got - reference_attention(layer, x, rotation, tile=True)).abs().max() > 1e-3


def test_kv_projection_sizes_follow_n_kv_heads(make_arch):
    for attn, kv, rows in [("mha", None, 32), ("gqa", 2, 16), ("mqa", None, 8)]:
        layer = CausalSelfAttention(make_arch(attn=attn, n_kv_heads=kv, bias=False))
        assert layer.q.weight.shape == (32, 32)
        assert layer.k.weight.shape == layer.v.weight.shape == (rows, 32)
        assert sum(p.numel() for p in layer.parameters()) == 2 * 32 * 32 + 2 * rows * 32


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_kv_cache_bytes(dtype):
    layers, batch, kv, max_len, hd = 3, 2, 5, 17, 8
    cache = KVCache(layers, batch, kv, max_len, hd, dtype=dtype)
    elem = torch.empty((), dtype=dtype).element_size()
    assert cache.nbytes == 2 * layers * batch * kv * max_len * hd * elem
    assert cache.bytes_per_token() == 2 * layers * batch * kv * hd * elem
    assert cache.k.shape == cache.v.shape == (layers, batch, kv, max_len, hd)


def test_kv_cache_for_model_uses_kv_heads(make_arch):
    arch = make_arch(attn="gqa", n_kv_heads=2, n_layers=3, max_seq_len=20)
    cache = KVCache.for_model(arch, batch_size=4)
    assert cache.nbytes == 2 * 3 * 4 * 2 * 20 * 8 * 4
    mqa = KVCache.for_model(make_arch(attn="mqa", n_layers=3), batch_size=4, max_seq_len=20)
    assert mqa.nbytes * 2 == cache.nbytes


def test_kv_cache_update_and_overflow():
    cache = KVCache(1, 1, 1, 5, 2)
    k1, v1 = _x((1, 1, 3, 2), 1), _x((1, 1, 3, 2), 2)
    ks, vs = cache.update(0, k1, v1)
    assert torch.equal(ks, k1) and torch.equal(vs, v1)
    cache.pos = 3
    k2, v2 = _x((1, 1, 2, 2), 3), _x((1, 1, 2, 2), 4)
    ks, vs = cache.update(0, k2, v2)
    assert torch.equal(ks, torch.cat((k1, k2), dim=2)) and torch.equal(vs, torch.cat((v1, v2), dim=2))
    cache.pos = 4
    with pytest.raises(ValueError, match="KV cache holds 5"):
        cache.update(0, k2, v2)


@pytest.mark.parametrize("n_heads,n_kv", [(4, 4), (4, 2), (4, 1), (8, 2)])
@pytest.mark.parametrize("start,t", [(0, 6), (5, 4), (7, 1), (3, 3), (0, 1)])
@pytest.mark.parametrize("path", [sdpa, reference_sdpa, folded_sdpa])
def test_sdpa_chunk_after_prefix_is_bottom_right_causal(n_heads, n_kv, start, t, path):
    """Every path (the dispatcher, the SDPA reference, the folded fast path) against the written-out formula."""
    s = start + t
    q = _x((2, n_heads, t, 8), 1)
    k, v = _x((2, n_kv, s, 8), 2), _x((2, n_kv, s, 8), 3)
    group = n_heads // n_kv
    want = manual_attention(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), start=start)
    torch.testing.assert_close(path(q, k, v, start), want, atol=1e-5, rtol=1e-5)
    if start and t > 1:  # the top-left mask SDPA's is_causal would apply is wrong here
        top_left = torch.nn.functional.scaled_dot_product_attention(
            q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), is_causal=True
        )
        assert (top_left - want).abs().max() > 1e-3


def test_attention_with_cache_equals_full(make_arch, rand_params):
    arch = make_arch(attn="gqa", n_kv_heads=2, pos="rope", n_layers=1)
    layer = rand_params(CausalSelfAttention(arch), seed=5)
    rope = RotaryPositions(arch)
    x = _x((2, 9, 32), seed=6)
    full = layer(x, rope.rotation(9, 0))
    cache = KVCache.for_model(arch, batch_size=2)
    parts = []
    for a, b in [(0, 4), (4, 7), (7, 8), (8, 9)]:
        parts.append(layer(x[:, a:b], rope.rotation(b - a, a), cache))
        cache.pos = b
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-5, rtol=1e-5)


def test_kv_cache_clone_is_equal_and_independent():
    cache = KVCache(2, 1, 2, 6, 4)
    cache.k.normal_()
    cache.v.normal_()
    cache.pos = 3
    twin = cache.clone()
    assert twin.pos == 3 and twin.max_seq_len == 6
    assert torch.equal(twin.k, cache.k) and torch.equal(twin.v, cache.v)
    assert twin.k.data_ptr() != cache.k.data_ptr() and twin.v.data_ptr() != cache.v.data_ptr()
    twin.update(0, torch.ones(1, 2, 1, 4), torch.ones(1, 2, 1, 4))
    assert not torch.equal(twin.k, cache.k)  # writing the copy leaves the original alone


def test_sdpa_folds_only_shared_heads_on_short_steps(monkeypatch):
    taken = []
    monkeypatch.setattr(kernels, "folded_sdpa", lambda *a: taken.append("fold") or reference_sdpa(*a))
    for n_kv, t in [(2, 1), (2, kernels.FOLD_MAX_QUERIES), (2, kernels.FOLD_MAX_QUERIES + 1), (4, 1)]:
        taken.clear()
        sdpa(_x((1, 4, t, 8)), _x((1, n_kv, t, 8)), _x((1, n_kv, t, 8)))
        assert taken == (["fold"] if n_kv < 4 and t <= kernels.FOLD_MAX_QUERIES else [])


@pytest.mark.parametrize("attn,n_kv", [("mha", None), ("gqa", 2), ("mqa", None)])
@pytest.mark.parametrize("rope", [False, True])
def test_cached_prefill_and_decode_match_reference_path_and_naive(make_arch, rand_params, monkeypatch, attn, n_kv,
                                                                  rope):
    """Prefill 6 tokens, a 3-token chunk, then 3 single-token steps: the fast path, the SDPA reference path
    and the written-out layer on the whole sequence agree."""
    arch = make_arch(attn=attn, n_kv_heads=n_kv, n_heads=8, d_model=64, pos="rope" if rope else "learned",
                   n_layers=1)
    layer = rand_params(CausalSelfAttention(arch), seed=7, scale=2.0)
    positions = RotaryPositions(arch) if rope else None
    x = _x((2, 12, 64), seed=8)
    steps = [(0, 6), (6, 9), (9, 10), (10, 11), (11, 12)]

    def run() -> torch.Tensor:
        cache = KVCache.for_model(arch, batch_size=2)
        parts = []
        for a, b in steps:
            rotation = positions.rotation(b - a, a) if rope else None
            parts.append(layer(x[:, a:b], rotation, cache))
            cache.pos = b
        return torch.cat(parts, dim=1)

    fast = run()
    monkeypatch.setattr(kernels, "sdpa", reference_sdpa)
    torch.testing.assert_close(fast, run(), atol=1e-5, rtol=1e-5)
    naive = reference_attention(layer, x, positions.rotation(12, 0) if rope else None)
    torch.testing.assert_close(fast, naive, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("attn,n_kv", [("mha", None), ("gqa", 2), ("mqa", None)])
@pytest.mark.parametrize("window", [1, 3, 16])
def test_the_window_hook_keeps_only_the_last_keys_of_each_query(make_arch, rand_params, attn, n_kv, window):
    """A sliding window through the attention's ``window`` hook: full prefill, and a prefix then a chunk then
    single tokens through the cache, against the written-out reference with keys past the window masked."""
    layer = rand_params(CausalSelfAttention(make_arch(attn=attn, n_kv_heads=n_kv)), seed=5)
    layer.window = window
    x = _x((2, 10, 32), seed=6)
    nh, nkv, hd = layer.n_heads, layer.n_kv_heads, layer.head_dim

    def heads(lin: torch.nn.Linear, n: int) -> torch.Tensor:
        return torch.nn.functional.linear(x.double(), lin.weight.double(), lin.bias.double()).view(
            2, 10, n, hd).transpose(1, 2)

    q, k, v = heads(layer.q, nh), heads(layer.k, nkv), heads(layer.v, nkv)
    k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    i, j = torch.arange(10)[:, None], torch.arange(10)[None, :]
    scores = scores.masked_fill((j > i) | (j <= i - window), float("-inf"))
    y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(2, 10, nh * hd)
    expected = torch.nn.functional.linear(y, layer.out.weight.double(), layer.out.bias.double()).float()
    torch.testing.assert_close(layer(x), expected, atol=1e-5, rtol=1e-5)
    cache = KVCache(1, 2, nkv, 10, hd)
    parts = []
    for a, b in ((0, 4), (4, 7), (7, 8), (8, 9), (9, 10)):
        parts.append(layer(x[:, a:b], None, cache))
        cache.pos = b
    torch.testing.assert_close(torch.cat(parts, dim=1), expected, atol=1e-5, rtol=1e-5)
