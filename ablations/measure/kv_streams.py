"""Decode attention on KV caches that come from memory, as a many-layer model reads them.

A model of L layers reads L distinct caches per decode step, so no layer finds its cache in the last-level
cache. Timing one small cache over and over (MQA's 8 MiB, GQA-2's 16 MiB at batch 4, context 4096 here, against
a 32 MiB L3) would read it from the LLC instead and flatter every path with few KV heads. Each call here reads
the next of several distinct caches that together span far more than the LLC.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch

from blockbench import Step
from components import ArchConfig, CausalSelfAttention, ModelConfig

Cache = tuple[torch.Tensor, torch.Tensor]
DecodeAttention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]


def cache_views(batch: int, kv_heads: int, context: int, head_dim: int, dtype: torch.dtype = torch.float32) -> Cache:
    """K and V as the model reads them: the first ``context`` positions of a one-longer cache (strided views)."""
    k = torch.randn(batch, kv_heads, context + 1, head_dim, dtype=dtype)
    v = torch.randn(batch, kv_heads, context + 1, head_dim, dtype=dtype)
    return k[:, :, :context], v[:, :, :context]


def cache_bytes(cache: Cache) -> int:
    """K and V bytes one step reads."""
    return sum(t.numel() * t.element_size() for t in cache)


def caches_spanning(total_bytes: int, batch: int, kv_heads: int, context: int, head_dim: int,
                    dtype: torch.dtype = torch.float32) -> list[Cache]:
    """Enough distinct caches (at least two) that together they span ``total_bytes``."""
    one = 2 * batch * kv_heads * context * head_dim * torch.empty((), dtype=dtype).element_size()
    return [cache_views(batch, kv_heads, context, head_dim, dtype) for _ in range(max(2, -(-total_bytes // one)))]


def cycled_step(attention: DecodeAttention, q: torch.Tensor, caches: list[Cache],
                start: int) -> Callable[[], torch.Tensor]:
    """A decode step of ``attention`` that reads the next of ``caches`` at each call."""
    turn = itertools.cycle(caches)

    def step() -> torch.Tensor:
        k, v = next(turn)
        return attention(q, k, v, start)

    return step


def decode_attention_flops(batch: int, heads: int, context: int, head_dim: int) -> int:
    """QK^T and PV of one new token per query head over ``context`` keys, as attention states its own work
    (``CausalSelfAttention.work``); ``ablations.measure.flops`` checks that count against torch's."""
    arch = ArchConfig(model=ModelConfig(d_model=heads * head_dim, n_heads=heads, max_seq_len=context + 1))
    return CausalSelfAttention.work(arch, Step(batch, 1, context)).attention_flops
