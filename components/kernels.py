"""Attention kernels: causal ``softmax(QK^T / sqrt(d)) V`` over a step's keys, K/V heads shared by query groups.

Every kernel takes q (batch, n_heads, t, d) and k, v (batch, n_kv_heads, s, d) whose keys end with the step's own t,
so queries and keys align bottom-right (``causal_mask``, the one mask builder; MLA's module uses it too). K and V are
never copied per query head: query head i reads KV head ``i // group`` (``fold_queries``). Copying them
(``repeat_kv``) would add memory traffic that GQA exists to save, and blame the harness's copy on the design choice.

``attend`` picks the kernel for a step (``sdpa`` chooses between the first two):

- ``reference_sdpa``: SDPA with ``enable_gqa=True``, what the others are tested against; its CPU decode step
  reads a shared-head cache at a lower rate than MHA's (``scripts/attention_bandwidth.py``, whose figures are in
  ``results/reference/roofline``), which would blame the library's kernel on the design choice.
- ``folded_sdpa``: each KV head's query group becomes the query dimension of one plain SDPA call, so the kernel
  streams each KV head once for its whole group. Used for steps of at most ``FOLD_MAX_QUERIES`` new tokens (decode
  and short chunks); long prefills keep the reference, whose causal kernel skips the masked half.
- ``masked_sdpa``: one float mask, for a score bias (ALiBi) or a sliding window that hides some key.
- ``transformed_attention``: the scores formed explicitly, for the ``scores`` choices (a soft cap).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

# Longest step that takes the folded path; a prefill past it keeps the reference's causal kernel.
FOLD_MAX_QUERIES = 16
# The dtype the attention core runs in when it differs from its inputs' (None: the inputs' own). Set only through
# ``core_dtype``: under CPU bf16 autocast the products are faster in bf16 while SDPA's bf16 backward can be slower
# than float32's, so the training step may keep the core in float32 (``ablations.quality.precision`` measures it).
_CORE_DTYPE: torch.dtype | None = None


@contextmanager
def core_dtype(dtype: torch.dtype | None) -> Iterator[None]:
    """Run ``attend`` in ``dtype`` inside the block (inputs cast in, the output cast back, autocast off for the
    core alone); None leaves it in its inputs' dtype."""
    global _CORE_DTYPE
    before, _CORE_DTYPE = _CORE_DTYPE, dtype
    try:
        yield
    finally:
        _CORE_DTYPE = before


def causal_mask(t: int, s: int, device: torch.device, window: int | None = None) -> torch.Tensor:
    """(t, s) bool: which of s keys each of a step's t queries sees. The keys end with the step's own, so query j
    sits at key position s - t + j and sees every key up to it; with a ``window``, only its last ``window`` keys, its
    own included (Hugging Face's ``kv_idx > q_idx - window``)."""
    mask = torch.ones(t, s, dtype=torch.bool, device=device).tril(diagonal=s - t)
    if window is not None:
        mask &= torch.ones(t, s, dtype=torch.bool, device=device).triu(diagonal=s - t - window + 1)
    return mask


def additive_mask(seen: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
    """``seen`` as a float mask to add to the scores: 0 where a key is seen, -inf elsewhere, plus ``bias``
    (heads, t, s) when given."""
    mask = torch.zeros(seen.shape, dtype=dtype, device=seen.device).masked_fill(~seen, float("-inf"))
    return mask if bias is None else mask + bias.to(dtype)


def step_mask(t: int, s: int, bias: torch.Tensor | None, dtype: torch.dtype,
              device: torch.device) -> torch.Tensor | None:
    """The mask of a causal step without a window: None when every key is seen (one new token after its cache), the
    bool ``causal_mask`` without a bias, else the ``additive_mask`` with ``bias`` (heads, t, s)."""
    if bias is None:
        return None if t == 1 else causal_mask(t, s, device)
    return additive_mask(causal_mask(t, s, device), bias, dtype)


def fold_queries(x: torch.Tensor, n_kv: int) -> torch.Tensor:
    """(batch, n_heads, t, ...) viewed as (batch, n_kv, group * t, ...): query head i = kv * group + g reads KV
    head ``kv = i // group``, so each KV head's queries sit beside the one K/V head they read."""
    b, h, t = x.shape[:3]
    return x.reshape(b, n_kv, (h // n_kv) * t, *x.shape[3:])


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None,
           window: int | None = None, transforms: nn.ModuleList | None = None) -> torch.Tensor:
    """Each of the step's queries over the keys it sees, with ``bias`` (heads, t, s) added to the scores, a sliding
    ``window``, and the ``scores`` choices' ``transforms``. Only with more keys than the window does a query lose one
    to it; without a bias, a window that hides a key or a transform, the plain causal paths run. Inside
    ``core_dtype`` the core runs in that dtype."""
    dtype = _CORE_DTYPE
    if dtype is not None and q.dtype != dtype:
        with torch.autocast(q.device.type, enabled=False):
            return attend(q.to(dtype), k.to(dtype), v.to(dtype), bias, window, transforms).to(q.dtype)
    t, s = q.shape[2], k.shape[2]
    if window is not None and s <= window:
        window = None
    if transforms is not None:
        return transformed_attention(q, k, v, bias, window, transforms)
    if bias is None and window is None:
        return sdpa(q, k, v, s - t)
    return masked_sdpa(q, k, v, bias, window)


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Causal SDPA for queries at positions ``start..start+len(q)-1`` over keys at ``0..start+len(q)-1``.

    Shared KV heads on a short step take the folded path; everything else the reference. A score bias or a
    window takes ``masked_sdpa``.
    """
    if q.shape[1] != k.shape[1] and q.shape[2] <= FOLD_MAX_QUERIES:
        return folded_sdpa(q, k, v, start)
    return reference_sdpa(q, k, v, start)


def masked_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None,
                window: int | None) -> torch.Tensor:
    """SDPA with one float mask: -inf where a key is not seen (future, or outside the last ``window`` keys of each
    query, its own included), plus ``bias`` (heads, t, s), ALiBi's distance penalty.

    Shared KV heads are folded into the query dimension as in ``folded_sdpa``, so K/V are never copied; the
    per-head bias folds the same way (head i = kv * group + g).
    """
    b, h, t, d = q.shape
    n_kv, s = k.shape[1], k.shape[2]
    mask = additive_mask(causal_mask(t, s, q.device, window), bias, q.dtype)
    if bias is None:
        mask = mask.expand(h, t, s)
    y = F.scaled_dot_product_attention(fold_queries(q, n_kv), k, v, attn_mask=mask.reshape(n_kv, (h // n_kv) * t, s))
    return y.reshape(b, h, t, d)


def transformed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None,
                          window: int | None, transforms: nn.ModuleList) -> torch.Tensor:
    """``masked_sdpa`` with the scores formed explicitly, so the ``scores`` choices can transform them: each module
    maps ``q·k / sqrt(head_dim)`` of shape (batch, heads, queries, keys) before the mask and ``bias`` are added
    (Gemma-2 caps the scaled logits, then masks). Shared KV heads are folded as in ``masked_sdpa`` (no K/V copy).

    The softmax runs in float32 for reduced-precision input, as SDPA's math path does (float64 stays float64)."""
    b, h, t, d = q.shape
    n_kv, s = k.shape[1], k.shape[2]
    scores = (fold_queries(q, n_kv) @ k.transpose(-2, -1)) * d**-0.5
    scores = scores.reshape(b, h, t, s)
    for transform in transforms:
        scores = transform(scores)
    scores = scores.masked_fill(~causal_mask(t, s, q.device, window), float("-inf"))
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    weights = torch.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32)).to(q.dtype)
    y = fold_queries(weights, n_kv) @ v
    return y.reshape(b, h, t, d)


def folded_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int = 0) -> torch.Tensor:
    """``reference_sdpa`` with each KV head's query group folded into the query dimension (``fold_queries``).

    Each folded row is query (g, j) at position start + j: its mask row is row j of the step's mask, repeated per
    group.
    """
    b, h, t, d = q.shape
    n_kv, s = k.shape[1], k.shape[2]
    folded = fold_queries(q, n_kv)
    if t == 1 and start == s - 1:
        y = F.scaled_dot_product_attention(folded, k, v)  # one new token sees every key: no mask
    else:
        mask = causal_mask(t, s, q.device).repeat(h // n_kv, 1)
        y = F.scaled_dot_product_attention(folded, k, v, attn_mask=mask)
    return y.reshape(b, h, t, d)


def reference_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int = 0) -> torch.Tensor:
    """SDPA itself, shared KV heads through ``enable_gqa``: the path every other one is tested against.

    SDPA's ``is_causal`` aligns the mask top-left, which is right only when queries start at 0; a single
    decode step sees every key; a chunk after a prefix needs the explicit bottom-right mask.
    """
    t, s = q.shape[2], k.shape[2]
    gqa = q.shape[1] != k.shape[1]
    if start == 0 and t == s:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    if t == 1:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(t, s, q.device), enable_gqa=gqa)
