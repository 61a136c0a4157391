"""How many kernels one call of the timed unit launches: the count the per-call overhead multiplies.

Counted, not estimated: a one- and a two-layer replica of the architecture (same choices, tiny sizes) run on the
CPU under a dispatch mode that counts every aten operator except views (views launch nothing). The difference
is one block's count; the rest is positions and the final norm. The count is the eager path's; a compiler that
fuses kernels launches fewer.
"""

from __future__ import annotations

import dataclasses

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from components import ArchConfig, ModelConfig, build_decoder


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        if not func.is_view:
            self.count += 1
        return func(*args, **(kwargs or {}))


def replica(arch: ArchConfig, layers: int) -> ArchConfig:
    """The same choices and head structure (so GQA stays GQA) at 4 dims a head, ``layers`` blocks: what decides the
    kernel count, not the sizes. An explicit FFN width belongs to the sizes and is dropped.

    Attention with KV heads is named by them (GQA at every head's own KV head is MHA's kernels). Any other
    attention (MLA: a latent, not KV heads) keeps its own class, so its own kernels are counted; its explicit sizes
    belong to the sizes and are dropped, except that a compressed query keeps its extra projection (at 4 wide).
    """
    heads, kv = arch.model.n_heads, arch.n_kv_heads
    model = ModelConfig(d_model=4 * heads, n_layers=layers, n_heads=heads, max_seq_len=16, vocab_size=16)
    if arch.attn.name in ("mha", "gqa", "mqa"):
        attn = dataclasses.replace(arch.attn, name="mha" if kv == heads else "gqa",
                                   n_kv_heads=None if kv == heads else kv)
    else:
        attn = dataclasses.replace(arch.attn, kv_lora_rank=None, qk_rope_head_dim=None,
                                   q_lora_rank=None if arch.attn.q_lora_rank is None else 4)
    if attn.window is not None:
        # A window keeps its rolling cache, and decodes, as a full-size one does once full (its W slots, no mask),
        # at a width the replica's 16 positions allow whatever the position scheme (a table refuses W >= 16).
        attn = dataclasses.replace(attn, window=min(attn.window, 8))
    return arch.replace(model=model, attn=attn, ffn=dataclasses.replace(arch.ffn, hidden_dim=None, multiplier=None,
                                                                       multiple_of=1))


def _count(arch: ArchConfig, mode: str) -> int:
    torch.manual_seed(0)
    model = build_decoder(arch)
    d = arch.model.d_model
    seq = 1 if mode == "decode" else 4
    x = torch.randn(2, seq, d, requires_grad=False)
    cache = model.new_cache(2, 8) if mode in ("decode", "prefill") else None
    if cache is not None and mode == "decode":
        cache.pos = 4
    counter = _OpCounter()
    if mode == "train":
        with counter:
            model(x).float().square().mean().backward()
    else:
        with torch.inference_mode(), counter:
            model(x, cache)
    return counter.count


_COUNTS: dict[tuple[str, str], tuple[int, int]] = {}


def _counts(arch: ArchConfig, mode: str) -> tuple[int, int]:
    """(kernels per block, kernels outside the blocks), counted once per replica and mode."""
    key = (mode, repr(replica(arch, 1)))
    if key not in _COUNTS:
        one, two = _count(replica(arch, 1), mode), _count(replica(arch, 2), mode)
        _COUNTS[key] = (two - one, 2 * one - two)
    return _COUNTS[key]


def kernel_calls(arch: ArchConfig, mode: str) -> int:
    """Kernels one call of the decoder launches in ``mode`` (forward, train, prefill, decode), eagerly."""
    per_layer, rest = _counts(arch, mode)
    return arch.model.n_layers * per_layer + rest
