"""The candidate decode-attention kernel (``decode_attention.cpp``) built and called the way the harness calls
attention: ``decode(q, k, v, start)`` with q (batch, heads, 1, 64) and K/V (batch, kv_heads, keys, 64), one new
token attending to every key. Compiled on first use with ``torch.utils.cpp_extension.load_inline`` (needs g++
and ``pip install ninja``; compiled once, then cached by torch)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import torch
from torch.utils.cpp_extension import load_inline

SOURCE = Path(__file__).with_name("decode_attention.cpp")
HEAD_DIM = 64


@cache
def _extension() -> object:
    return load_inline("blockbench_decode_candidate", cpp_sources=SOURCE.read_text(), functions=["decode_attention"],
                       extra_cflags=["-O3", "-march=native", "-ffast-math", "-fopenmp"], extra_ldflags=["-fopenmp"])


def handles(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int) -> bool:
    """A one-token step on CPU float32 with 64-wide heads and K/V rows contiguous: what the kernel takes."""
    return (q.shape[2] == 1 and start == k.shape[2] - 1 and q.shape[3] == HEAD_DIM and q.device.type == "cpu"
            and q.dtype == torch.float32 and all(t.stride(3) == 1 and t.stride(2) == HEAD_DIM for t in (k, v)))


def decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int) -> torch.Tensor:
    """Each KV head's query group folded into one (batch, kv_heads, group, 64) block, as ``folded_sdpa`` does."""
    b, h, _, d = q.shape
    folded = q.reshape(b, k.shape[1], h // k.shape[1], d).contiguous()
    return _extension().decode_attention(folded, k, v, d**-0.5).reshape(b, h, 1, d)


def load() -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]:
    """``decode``, compiled now rather than inside the first timed call."""
    _extension()
    return decode
