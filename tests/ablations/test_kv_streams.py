"""The decode-attention streams the calibration and ``scripts/attention_bandwidth.py`` time."""

from __future__ import annotations

import torch

from ablations.measure.flops import count_flops
from ablations.measure.kv_streams import cache_bytes, caches_spanning, cycled_step, decode_attention_flops
from components.kernels import folded_sdpa, reference_sdpa


def test_caches_span_the_asked_bytes_in_distinct_memory():
    caches = caches_spanning(1 << 20, batch=2, kv_heads=2, context=64, head_dim=16)
    one = 2 * 2 * 2 * 64 * 16 * 4
    assert cache_bytes(caches[0]) == one
    assert len(caches) == -(-(1 << 20) // one) and len(caches) * one >= 1 << 20
    assert len({t.data_ptr() for cache in caches for t in cache}) == 2 * len(caches)
    k, v = caches[0]
    assert k.shape == v.shape == (2, 2, 64, 16) and not k.is_contiguous()  # a view of a longer cache, as the model's


def test_a_small_span_still_cycles_two_caches():
    assert len(caches_spanning(1, batch=1, kv_heads=1, context=8, head_dim=4)) == 2


def test_each_call_reads_the_next_cache_in_turn():
    caches = caches_spanning(0, batch=1, kv_heads=1, context=8, head_dim=4) + caches_spanning(
        0, batch=1, kv_heads=1, context=8, head_dim=4)
    seen = []

    def attention(q, k, v, start):
        seen.append((k.data_ptr(), start))
        return q

    step = cycled_step(attention, torch.zeros(1), caches, start=7)
    for _ in range(6):
        step()
    ptrs = [cache[0].data_ptr() for cache in caches]
    assert seen == [(ptrs[i % 4], 7) for i in range(6)]


def test_the_flops_are_what_torch_counts_for_each_path():
    b, h, kv, s, d = 2, 8, 2, 32, 16
    q = torch.randn(b, h, 1, d)
    k, v = caches_spanning(0, b, kv, s, d)[0]
    expected = decode_attention_flops(b, h, s, d)
    for path, keys in ((reference_sdpa, (k.repeat_interleave(h // kv, 1), v.repeat_interleave(h // kv, 1))),
                       (folded_sdpa, (k, v))):
        assert count_flops(lambda p=path, keys=keys: p(q, *keys, s - 1)) == expected, path.__name__
