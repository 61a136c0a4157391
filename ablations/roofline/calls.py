"""How many kernels one call of the timed unit launches: the count the per-call overhead multiplies.

Counted, not estimated: a one- and a two-layer replica of the architecture (same choices, tiny sizes) run on the
CPU under a dispatch mode that counts every aten operator except views (views launch nothing). The difference
is one block's count; the rest is positions and the final norm. The count is the eager path's; a compiler that
fuses kernels launches fewer.
"""

from __future__ import annotations

import dataclasses
import functools

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from components import ArchConfig, AttnConfig, BiasConfig, FFNConfig, ModelConfig, NormConfig, PosConfig, build_decoder


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        if not func.is_view:
            self.count += 1
        return func(*args, **(kwargs or {}))


@dataclasses.dataclass(frozen=True)
class _Shape:
    """What decides the kernel count: the choices and the head structure, not the sizes."""

    mode: str
    heads: int
    kv_heads: int
    bias: bool
    pos: str
    layout: str
    norm: str
    ffn: str

    def replica(self, layers: int) -> ArchConfig:
        # The same heads (so GQA stays GQA) at 4 dims each.
        model = ModelConfig(d_model=4 * self.heads, n_layers=layers, n_heads=self.heads, max_seq_len=16,
                            vocab_size=16)
        attn = AttnConfig("mha") if self.kv_heads == self.heads else AttnConfig("gqa", self.kv_heads)
        pos = PosConfig(self.pos, layout=self.layout)
        return ArchConfig(model, pos, NormConfig(self.norm), FFNConfig(self.ffn), attn,
                          BiasConfig("on" if self.bias else "off"))


def _count(cfg: ArchConfig, mode: str) -> int:
    torch.manual_seed(0)
    model = build_decoder(cfg)
    d = cfg.model.d_model
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


@functools.cache
def _counts(shape: _Shape) -> tuple[int, int]:
    """(kernels per block, kernels outside the blocks)."""
    one, two = _count(shape.replica(1), shape.mode), _count(shape.replica(2), shape.mode)
    return two - one, 2 * one - two


def kernel_calls(cfg: ArchConfig, mode: str) -> int:
    """Kernels one call of the decoder launches in ``mode`` (forward, train, prefill, decode), eagerly."""
    shape = _Shape(mode, cfg.model.n_heads, cfg.n_kv_heads, cfg.bias.enabled, cfg.pos.name, cfg.pos.layout,
                   cfg.norm.name, cfg.ffn.name)
    per_layer, rest = _counts(shape)
    return cfg.model.n_layers * per_layer + rest
