"""Causal self-attention with 1..n_heads KV heads (MHA, GQA, MQA) and its KV cache.

One scaled-dot-product core serves every variant. K and V are never copied per query head: query head i
reads KV head ``i // (n_heads // n_kv_heads)`` (the Llama/HF mapping). Materialising the copies
(``repeat_kv``) was measured here to make long-context GQA decode slower than MHA, which would invert the
very result the kv sweep measures.

Two ways to reach the shared heads, one reference and one fast path:

- ``reference_sdpa``: SDPA with ``enable_gqa=True``. On CPU (torch 2.13) its decode step read a GQA-2
  cache at about a third of the bandwidth MHA's SDPA reaches, which would blame the harness's kernel on the
  design choice.
- ``folded_sdpa``: each KV head's query group becomes the query dimension of one plain SDPA call
  (q viewed as (batch, n_kv_heads, group x t, head_dim)), so the kernel streams each KV head once for its
  whole group. Used for steps of at most ``FOLD_MAX_QUERIES`` new tokens (decode and short chunks); long
  prefills keep the reference, whose causal kernel skips the masked half.

A sliding window (``attn.window=W``, Mistral 7B) lets each query see only its last W keys, its own included
(Hugging Face's ``kv_idx > q_idx - W``). No key older than W - 1 positions is ever seen again, so the model
decodes with a ``RollingKVCache``: W positions per layer however long the context, position p in slot p % W.
``masked_sdpa`` applies the window where some key falls out of it; everywhere else the plain causal paths run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import nn

from components.choice import Choice, Claim, choices, declare, hook_classes, hook_modules
from components.config import ArchConfig, ConfigError
from components.positions import POSITIONS, Rotation, ScoreBias, apply_rotation
from components.registry import Registry
from components.work import Step, Work, attention_core, linear

ATTENTIONS: Registry[type[nn.Module]] = Registry("attn.name")


@dataclass
class AttnConfig:
    name: str = "mha"  # mha | gqa | mqa | mla
    # None: the variant decides (mha: n_heads, mqa: 1). gqa requires a value.
    n_kv_heads: int | None = None
    # Sliding window (Mistral): each query sees only its last ``window`` keys, its own included. None: every
    # earlier key. Neutral: a point without a window keeps the identity it had before windows existed.
    window: int | None = field(default=None, metadata={"neutral": True})
    # MLA (DeepSeek-V2) sizes; None derives each from head_dim in DeepSeek-V2's proportions.
    kv_lora_rank: int | None = field(default=None, metadata={"neutral": True})
    qk_rope_head_dim: int | None = field(default=None, metadata={"neutral": True})
    q_lora_rank: int | None = field(default=None, metadata={"neutral": True})

    def check(self, arch: ArchConfig) -> None:
        resolve_kv_heads(self, arch.model.n_heads)
        _check_window(self.window, arch)
        check_mla(self, arch)

    def kv_heads(self, n_heads: int) -> int:
        return resolve_kv_heads(self, n_heads)


def _check_window(window: object, arch: ArchConfig) -> None:
    """``attn.window``: null, or a positive integer that can slide, i.e. one some sequence can outgrow."""
    if window is None:
        return
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"attn.window={window!r} must be a positive integer (the keys each query sees, its own "
                          "included) or null for no window")
    pos, n = arch.pos.name, arch.model.max_seq_len
    # A position table ends at max_seq_len, so no sequence outgrows such a window: it would be a second name for no
    # window. Models with unbounded positions (RoPE, ALiBi, none) are also built longer than they are trained (the
    # quality model's extrapolation), so there any window may slide.
    if pos in POSITIONS and POSITIONS.get(pos).bounded_length and window >= n:
        allowed = f"1..{n - 1}" if n > 1 else "none"
        raise ConfigError(f"attn.window={window} never slides with pos={pos}, whose table ends at "
                          f"model.max_seq_len={n}; allowed: {allowed}, or null for no window")


def resolve_kv_heads(attn: AttnConfig, n_heads: int) -> int:
    """KV heads for an attention variant: MHA has one per query head, MQA one in all, GQA in between; a value
    this does not name (a plugin's) has ``attn.n_kv_heads`` if set, else one per query head.

    MLA counts as one per query head: each head gets its own K and V, up-projected from the shared latent (as
    Hugging Face's ``DeepseekV2Config`` sets ``num_key_value_heads``), so its rows are never taken for GQA/MQA rows.
    What its cache holds is the latent, sized by ``attn.kv_lora_rank``, never by these heads.
    """
    kv = attn.n_kv_heads
    if attn.name == "mla":
        if kv is not None:
            raise ConfigError(f"attn.n_kv_heads={kv} contradicts attn=mla (its K and V are up-projected per head from "
                              "one shared latent, sized by attn.kv_lora_rank); leave it null")
        return n_heads
    if attn.name == "mha":
        if kv not in (None, n_heads):
            raise ConfigError(
                f"attn.n_kv_heads={kv} contradicts attn=mha (which has n_kv_heads = model.n_heads = {n_heads}); "
                "use attn=gqa for fewer KV heads"
            )
        return n_heads
    if attn.name == "mqa":
        if kv not in (None, 1):
            raise ConfigError(f"attn.n_kv_heads={kv} contradicts attn=mqa (which has 1); use attn=gqa")
        return 1
    if kv is None:
        if attn.name == "gqa":
            raise ConfigError(f"attn=gqa needs attn.n_kv_heads: a divisor of model.n_heads={n_heads}")
        return n_heads  # another value (a plugin's) without a count: one K/V head per query head, as MHA
    if not isinstance(kv, int) or kv < 1 or n_heads % kv:
        divisors = [d for d in range(1, n_heads + 1) if n_heads % d == 0]
        raise ConfigError(f"attn.n_kv_heads={kv} must be >= 1 and divide model.n_heads={n_heads}; allowed: {divisors}")
    return kv


class KVCache:
    """Preallocated K/V for every layer, sized by n_kv_heads: (layers, batch, n_kv_heads, max_len, head_dim).

    ``pos`` is the number of positions filled. Layers write at ``pos`` during a forward; the model
    advances ``pos`` once all layers ran. Setting ``pos`` back rewinds the cache (used to time one
    decode step repeatedly at a fixed context).
    """

    def __init__(
        self,
        n_layers: int,
        batch_size: int,
        n_kv_heads: int,
        max_seq_len: int,
        head_dim: int,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        shape = (n_layers, batch_size, n_kv_heads, max_seq_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.max_seq_len = max_seq_len
        self.pos = 0

    @classmethod
    def for_model(cls, cfg: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                  n_layers: int | None = None, **kw: object) -> KVCache:
        return cls(n_layers or cfg.model.n_layers, batch_size, cfg.n_kv_heads, max_seq_len or cfg.model.max_seq_len,
                   cfg.head_dim, **kw)

    def tensors(self) -> list[torch.Tensor]:
        return [self.k, self.v]

    def randomize_(self) -> None:
        """Random contents: decode cost does not depend on the cached values, so timing needs no prefill."""
        for t in self.tensors():
            t.normal_()

    @property
    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def bytes_per_token(self) -> int:
        """K and V bytes one stored position takes over all layers and the whole batch: what a token adds while
        the cache has room for it."""
        return self.nbytes // self.k.shape[3]

    def clone(self) -> KVCache:
        """The same contents and position in newly allocated memory."""
        other = copy.copy(self)
        other.k, other.v = self.k.clone(), self.v.clone()
        return other

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's K/V at ``pos`` and return the keys and values its queries may see for ``layer``: here
        views of every position cached so far, 0..pos + t - 1, in position order."""
        end = self._end(k.shape[2])
        self.k[layer, :, :, self.pos : end] = k
        self.v[layer, :, :, self.pos : end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def keys_rolled(self, t: int, s: int) -> int:
        """How many places the ``s`` keys ``update`` returned for a step of ``t`` tokens are rolled from position
        order (key i holds the i-th key in position order rolled right by this much): never, here."""
        return 0

    def _end(self, t: int) -> int:
        end = self.pos + t
        if end > self.max_seq_len:
            raise ValueError(f"KV cache holds {self.max_seq_len} positions; position {end - 1} does not fit")
        return end


class RollingKVCache(KVCache):
    """Mistral's rolling buffer: K/V of only the last ``window`` positions, for sliding-window attention.

    No query sees a key more than ``window - 1`` positions before it, so nothing older is ever read again. Storage
    is (layers, batch, n_kv_heads, slots, head_dim) with ``slots = min(window, max_seq_len)``, however long the
    context: ``max_seq_len`` only bounds ``pos`` (positions keep counting), and position p lives in slot p % slots.

    A single-token step (decode) writes its K/V into its slot and attends over the filled slots as they lie, with
    no copy. Slot order does not matter: RoPE was applied to each key before it was cached, so a key carries its
    position in its values, and softmax(scores) V is a sum over keys, the same in any order of them. Only a score
    bias that depends on key positions (ALiBi) must follow the slots, which ``keys_rolled`` tells the attention.

    A chunk of t > 1 tokens needs the window mask on true positions, so ``update`` gathers the cached tail its
    first query sees (the last window - 1 positions, in position order: a copy), appends the new keys, and writes
    the last ``slots`` new ones back.

    Rewinding ``pos`` by one token and decoding it again is exact (the timing code does this at a fixed context):
    the step rewrites the one slot it wrote. Rewinding r > 1 tokens gives a step of the same cost, but the r - 1
    oldest keys of its window were overwritten by later positions. Rewinding to 0 (a prefill again) is exact.
    """

    def __init__(
        self,
        n_layers: int,
        batch_size: int,
        n_kv_heads: int,
        max_seq_len: int,
        head_dim: int,
        window: int,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        self.window = window
        self.slots = min(window, max_seq_len)
        super().__init__(n_layers, batch_size, n_kv_heads, self.slots, head_dim, dtype, device)
        self.max_seq_len = max_seq_len

    @classmethod
    def for_model(cls, cfg: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                  n_layers: int | None = None, **kw: object) -> RollingKVCache:
        return cls(n_layers or cfg.model.n_layers, batch_size, cfg.n_kv_heads, max_seq_len or cfg.model.max_seq_len,
                   cfg.head_dim, cfg.attn.window, **kw)

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's K/V into its slots and return the keys and values its queries may see for ``layer``.

        One token: views of the filled slots, in slot order (``keys_rolled``). A chunk: the cached window - 1
        positions before it and the chunk itself, in position order, newly allocated.
        """
        start, t = self.pos, k.shape[2]
        end = self._end(t)
        ks, vs = self.k[layer], self.v[layer]
        if t == 1:
            ks[:, :, start % self.slots] = k[:, :, 0]
            vs[:, :, start % self.slots] = v[:, :, 0]
            filled = min(end, self.slots)
            return ks[:, :, :filled], vs[:, :, :filled]
        # Gathered before the write below, which may overwrite the very slots the first queries read.
        tail = torch.arange(max(0, start - self.window + 1), start, device=k.device) % self.slots
        keys, values = torch.cat((ks[:, :, tail], k), dim=2), torch.cat((vs[:, :, tail], v), dim=2)
        kept = min(t, self.slots)
        written = torch.arange(end - kept, end, device=k.device) % self.slots
        ks.index_copy_(2, written, k[:, :, t - kept :])
        vs.index_copy_(2, written, v[:, :, t - kept :])
        return keys, values

    def keys_rolled(self, t: int, s: int) -> int:
        """A single-token step's keys lie in slot order: the first key in position order, at position
        pos + 1 - s, sits in slot (pos + 1 - s) % slots. A chunk's keys are in position order."""
        return (self.pos + 1 - s) % self.slots if t == 1 else 0


@ATTENTIONS.register("mha")
@ATTENTIONS.register("gqa")
@ATTENTIONS.register("mqa")
class CausalSelfAttention(nn.Module):
    """Multi-head causal attention ``softmax(QK^T / sqrt(d_k)) V`` with n_kv_heads K/V heads.

    MHA, GQA and MQA differ only in ``cfg.n_kv_heads``; with n_kv_heads == n_heads this is exactly MHA. With
    ``cfg.attn.window`` = W each query sees only its last W keys, its own included (Mistral 7B; the same keys as
    Hugging Face's ``MistralAttention``: key j is seen by query i iff i - W < j <= i), and decodes with a
    ``RollingKVCache`` (``new_cache``).
    """

    def __init__(self, cfg: ArchConfig, layer: int = 0) -> None:
        super().__init__()
        d, bias = cfg.model.d_model, cfg.bias.enabled
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.model.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.layer = layer
        # Separate projections (Llama's wq/wk/wv) so GQA's smaller K/V weights are visible in counts.
        self.q = nn.Linear(d, self.n_heads * self.head_dim, bias=bias)
        self.k = nn.Linear(d, self.n_kv_heads * self.head_dim, bias=bias)
        self.v = nn.Linear(d, self.n_kv_heads * self.head_dim, bias=bias)
        self.out = nn.Linear(self.n_heads * self.head_dim, d, bias=bias)
        # The choices that transform each head's Q, K and V right after the projections (Primer's convolutions):
        # registered only when one builds a module, so attention without one keeps its modules exactly.
        projected = hook_modules(cfg, "qkv")
        if projected:
            self.qkv = nn.ModuleList(projected)
        # The choices that transform each head's Q and K before the rotation (QK-norm), in declaration order.
        self.qk = nn.ModuleList(hook_modules(cfg, "qk"))
        # The choices that transform the scores (a soft cap): registered only when one builds a module, so attention
        # without one keeps its modules and its fused SDPA paths exactly.
        transforms = hook_modules(cfg, "scores")
        if transforms:
            self.scores = nn.ModuleList(transforms)
        # Keys a query sees: all earlier ones (None), or only the last ``window`` (a sliding window).
        self.window: int | None = cfg.attn.window

    @classmethod
    def new_cache(cls, cfg: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                  n_layers: int | None = None, **kw: object) -> KVCache:
        """Every position's K/V (``KVCache``), or with a window only the last ``window`` positions'
        (``RollingKVCache``): what no query will see again need not be kept."""
        make = KVCache if cfg.attn.window is None else RollingKVCache
        return make.for_model(cfg, batch_size, max_seq_len, n_layers, **kw)

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        """Projections (K/V's outputs are the cache writes), the core, and the transforms of the ``qkv``, ``qk`` and
        ``scores`` choices.

        The core counts every query against ``step.keys`` keys, the full T x S score matrix of the conventions
        (causal masking is not subtracted); a window of W caps that at W keys a query. So a window at least as long
        as the context counts exactly as no window, and a decode step counts the min(keys, W) keys it reads. The
        keys the step holds are every key some query of it sees, once: the last W - 1 keys before the step and its
        own. The cache read is those; and where a window hides some of them, ``masked_sdpa`` scores them all (a
        dense kernel under a mask), so the executed work counts every held key a query (``masked_flops``).
        """
        d, h, kv, hd, bias = cfg.model.d_model, cfg.model.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.bias.enabled
        n, window = step.tokens, cfg.attn.window
        per_query, held = step.keys, step.keys
        if window is not None:
            per_query, held = min(step.keys, window), min(step.keys, step.seq + window - 1)
        projections = (linear(d, h * hd, n, bias) + 2 * linear(d, kv * hd, n, bias, write_output=False)
                       + linear(h * hd, d, n, bias))
        core = attention_core(step.batch, h, step.seq, per_query, hd, hd, executed_keys=held) + Work(
            attention_activations=2 * n * h * hd,  # reads Q, writes its output
            kv_read=2 * step.batch * kv * held * hd, kv_write=2 * n * kv * hd)
        transforms = [*hook_classes(cfg, "qkv"), *hook_classes(cfg, "qk"), *hook_classes(cfg, "scores")]
        return sum((cls_.work(cfg, step) for cls_ in transforms), projections + core)

    def forward(self, x: torch.Tensor, rotation: Rotation | None = None, cache: KVCache | None = None,
                score_bias: ScoreBias | None = None) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        for projected in self._modules.get("qkv") or ():
            q, k, v = projected(q, k, v)
        for transform in self.qk:
            q, k = transform(q, k)
        if rotation is not None:
            q, k = apply_rotation(q, rotation), apply_rotation(k, rotation)
        start = 0
        if cache is not None:
            start = cache.pos
            k, v = cache.update(self.layer, k, v)
        s = k.shape[2]
        # The keys end with this step's own, so the first sits at position start + t - s: 0, unless a rolling
        # cache left out keys no query sees. Every path below aligns queries and keys bottom-right.
        first = start + t - s
        bias = None
        if score_bias is not None:
            # Shifted so the first key is position 0: the bias depends on the distance i - j alone (ScoreBias).
            bias = score_bias(start - first, t, s, q.device)
            if cache is not None and (roll := cache.keys_rolled(t, s)):
                bias = bias.roll(roll, dims=-1)  # follow the keys into their slots
        # Only with more keys than the window does a query lose one to it.
        window = self.window if self.window is not None and s > self.window else None
        transforms = self._modules.get("scores")
        if transforms is not None:
            y = transformed_attention(q, k, v, s - t, bias, window, transforms)
        elif bias is None and window is None:
            y = sdpa(q, k, v, s - t)
        else:
            y = masked_sdpa(q, k, v, s - t, bias, window)
        return self.out(y.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim))


# Longest step that takes the folded path; a prefill past it keeps the reference's causal kernel.
FOLD_MAX_QUERIES = 16


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Causal SDPA for queries at positions ``start..start+len(q)-1`` over keys at ``0..start+len(q)-1``.

    Shared KV heads on a short step take the folded path; everything else the reference. A score bias or a
    window takes ``masked_sdpa``.
    """
    if q.shape[1] != k.shape[1] and q.shape[2] <= FOLD_MAX_QUERIES:
        return folded_sdpa(q, k, v, start)
    return reference_sdpa(q, k, v, start)


def _bottom_right_mask(t: int, s: int, device: torch.device, window: int | None = None) -> torch.Tensor:
    mask = torch.ones(t, s, dtype=torch.bool, device=device).tril(diagonal=s - t)
    if window is not None:
        mask &= torch.ones(t, s, dtype=torch.bool, device=device).triu(diagonal=s - t - window + 1)
    return mask


def masked_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int, bias: torch.Tensor | None,
                window: int | None) -> torch.Tensor:
    """SDPA with one float mask: -inf where a key is not seen (future, or outside the last ``window`` keys of each
    query, its own included), plus ``bias`` (heads, t, s), ALiBi's distance penalty.

    Shared KV heads are folded into the query dimension as in ``folded_sdpa``, so K/V are never copied; the
    per-head bias folds the same way (head i = kv * group + g).
    """
    b, h, t, d = q.shape
    n_kv, s = k.shape[1], k.shape[2]
    group = h // n_kv
    seen = _bottom_right_mask(t, s, q.device, window)
    mask = torch.zeros(t, s, dtype=q.dtype, device=q.device).masked_fill(~seen, float("-inf"))
    mask = mask.expand(h, t, s) if bias is None else mask + bias.to(q.dtype)
    folded = q.reshape(b, n_kv, group * t, d)
    y = F.scaled_dot_product_attention(folded, k, v, attn_mask=mask.reshape(n_kv, group * t, s))
    return y.reshape(b, h, t, d)


def transformed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int, bias: torch.Tensor | None,
                          window: int | None, transforms: nn.ModuleList) -> torch.Tensor:
    """``masked_sdpa`` with the scores formed explicitly, so the ``scores`` choices can transform them: each module
    maps ``q·k / sqrt(head_dim)`` of shape (batch, heads, queries, keys) before the mask and ``bias`` are added
    (Gemma-2 caps the scaled logits, then masks). Shared KV heads are folded as in ``masked_sdpa`` (no K/V copy).

    The softmax runs in float32 for reduced-precision input, as SDPA's math path does (float64 stays float64)."""
    b, h, t, d = q.shape
    n_kv, s = k.shape[1], k.shape[2]
    group = h // n_kv
    scores = (q.reshape(b, n_kv, group * t, d) @ k.transpose(-2, -1)) * d**-0.5
    scores = scores.reshape(b, h, t, s)
    for transform in transforms:
        scores = transform(scores)
    seen = _bottom_right_mask(t, s, q.device, window)
    scores = scores.masked_fill(~seen, float("-inf"))
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    weights = torch.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32)).to(q.dtype)
    y = weights.reshape(b, n_kv, group * t, s) @ v
    return y.reshape(b, h, t, d)


def folded_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int = 0) -> torch.Tensor:
    """``reference_sdpa`` with each KV head's query group folded into the query dimension.

    Query head i = kv * group + g belongs to KV head kv, so (batch, heads, t, d) viewed as
    (batch, n_kv, group * t, d) keeps every query beside the one K/V head it reads. Each folded row is
    query (g, j) at position start + j: its mask row is row j of the step's mask, repeated per group.
    """
    b, h, t, d = q.shape
    n_kv, s = k.shape[1], k.shape[2]
    folded = q.reshape(b, n_kv, (h // n_kv) * t, d)
    if t == 1 and start == s - 1:
        y = F.scaled_dot_product_attention(folded, k, v)  # one new token sees every key: no mask
    else:
        mask = _bottom_right_mask(t, s, q.device).repeat(h // n_kv, 1)
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
    return F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right_mask(t, s, q.device), enable_gqa=gqa)


def build_attention(cfg: ArchConfig, layer: int = 0) -> nn.Module:
    return ATTENTIONS.get(cfg.attn.name)(cfg, layer)


def new_cache(cfg: ArchConfig, batch_size: int, max_seq_len: int | None = None, n_layers: int | None = None,
              **kw: object) -> KVCache:
    """The cache ``cfg``'s attention decodes with (``n_layers`` defaults to the model's), from its class's own
    ``new_cache``: what a cache holds per token is the attention's business (K/V heads, a latent, a window).

    Every cache has ``pos``, ``max_seq_len``, ``nbytes``, ``bytes_per_token()``, ``clone()``, ``tensors()``,
    ``randomize_()`` and ``update(...)``.
    """
    cls = ATTENTIONS.get(cfg.attn.name)
    make = getattr(cls, "new_cache", None)
    if make is None:
        return KVCache.for_model(cfg, batch_size, max_seq_len, n_layers, **kw)
    return make(cfg, batch_size, max_seq_len, n_layers, **kw)


# --- MLA's sizes and checks (the module itself is ``components.mla``; its sizes are read here by the declaration) ---


@dataclass(frozen=True)
class MLASizes:
    """MLA's widths at a model size. K's non-rotated part and V are ``head_dim`` wide per head (the harness keeps
    the head size of the MHA it replaces); ``latent`` is what the cache holds per token and layer."""

    head_dim: int
    kv_lora_rank: int
    rope_dim: int
    q_lora_rank: int | None

    @property
    def latent(self) -> int:
        return self.kv_lora_rank + self.rope_dim


def mla_sizes(attn: AttnConfig, head_dim: int) -> MLASizes:
    """``attn``'s MLA sizes, each None filled in DeepSeek-V2's proportions to the head size (128 per head there):
    a latent of 4 heads' width (512) and a decoupled RoPE key of half a head (64, rounded down to an even width of
    at least 2, since RoPE rotates pairs). ``q_lora_rank`` None keeps a full-rank query projection."""
    return MLASizes(
        head_dim=head_dim,
        kv_lora_rank=attn.kv_lora_rank if attn.kv_lora_rank is not None else 4 * head_dim,
        rope_dim=attn.qk_rope_head_dim if attn.qk_rope_head_dim is not None else 2 * max(1, head_dim // 4),
        q_lora_rank=attn.q_lora_rank,
    )


_MLA_KEYS = {
    "kv_lora_rank": "the latent's width; DeepSeek-V2: 512",
    "qk_rope_head_dim": "the decoupled RoPE key's width; DeepSeek-V2: 64",
    "q_lora_rank": "the compressed query's width, or null for a full-rank query; DeepSeek-V2: 1536",
}


def check_mla(attn: AttnConfig, arch: ArchConfig) -> None:
    """MLA's settings (``AttnConfig.check`` calls this for every attention value).

    Other values have no latent, so an MLA size set on them is refused rather than silently ignored (it would still
    change the point's identity). With ``attn=mla``: every size a positive integer (the RoPE key's even, as RoPE
    rotates pairs), ``q_lora_rank`` also null; and two combinations refused. A window: the latent cache keeps every
    token (DeepSeek-V2 has no window). A ``qk`` transform (QK-norm): the absorbed path never forms a head's K (its
    up-projection is folded into the query), so a per-head norm of K cannot be applied to the cached latent.
    """
    set_keys = [k for k in _MLA_KEYS if getattr(attn, k) is not None]
    if attn.name != "mla":
        if set_keys:
            key = set_keys[0]
            raise ConfigError(f"attn.{key}={getattr(attn, key)!r} is an attn=mla setting; attn={attn.name} has no "
                              "latent: leave it null")
        return
    for key in set_keys:
        value = getattr(attn, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"attn.{key}={value!r} must be a positive integer ({_MLA_KEYS[key]})")
    if attn.qk_rope_head_dim is not None and attn.qk_rope_head_dim % 2:
        raise ConfigError(f"attn.qk_rope_head_dim={attn.qk_rope_head_dim} must be even (RoPE rotates pairs)")
    if attn.window is not None:
        raise ConfigError(f"attn.window={attn.window} is not supported with attn=mla (its latent cache keeps every "
                          "token; DeepSeek-V2 has no window): use attn.window=null")
    for c in choices():
        if c.hook in _NOT_WITH_MLA and c.registry.get(getattr(arch, c.group).name) is not None:
            raise ConfigError(f"{c.group}={getattr(arch, c.group).name} is not supported with attn=mla: "
                              f"{_NOT_WITH_MLA[c.hook]}; use {c.group}={c.gpt2}")


# The attention hooks MLA's module does not offer, and why.
_NOT_WITH_MLA = {
    "qk": "its decode path never forms a head's K (the up-projection is absorbed into the query), so K cannot be "
          "normalised per head",
    "scores": "its scores come from its own absorbed and expanded paths, which take no score transform",
    "qkv": "its K and V are up-projections of one cached latent (absorbed into the query and the output when it "
           "decodes), so no head's K or V is formed to transform",
}


def attention_kind(arch: ArchConfig) -> str:
    """The attention without its window: ``mha``, ``gqa2``, ``mqa``, ``mla`` (MLA's sizes named where they are not
    the defaults: ``mla-kv128-rope16-q96``); what a variant's label calls it (``ablations.config.columns``)."""
    if arch.attn.name == "mla":
        sizes, default = mla_sizes(arch.attn, arch.head_dim), mla_sizes(AttnConfig("mla"), arch.head_dim)
        parts = [f"kv{sizes.kv_lora_rank}" if sizes.kv_lora_rank != default.kv_lora_rank else "",
                 f"rope{sizes.rope_dim}" if sizes.rope_dim != default.rope_dim else "",
                 f"q{sizes.q_lora_rank}" if sizes.q_lora_rank is not None else ""]
        return "-".join(["mla", *filter(None, parts)])
    kv, heads = arch.n_kv_heads, arch.model.n_heads
    return "mha" if kv == heads else "mqa" if kv == 1 else f"gqa{kv}"


def _attn_matches(arch: ArchConfig, value: str) -> bool:
    """By KV heads: ``gqa`` with every head its own KV head is MHA; GQA is any fewer (Llama-2's GQA at the small
    quality model's one KV head of four is still its GQA). MLA by its name: it has a latent, not KV heads.

    A window moves attention off every value (a windowed MHA is not GPT-2's attention), so a windowed point's label
    names its attention with the window (``mha-w4096``, ``llama2-gqa2-w4096``)."""
    if arch.attn.window is not None:
        return False
    kv, heads = arch.n_kv_heads, arch.model.n_heads
    if value == "gqa":
        return arch.attn.name == "gqa" and kv < heads
    if value == "mla":
        return arch.attn.name == "mla"
    return attention_kind(arch) == value


def _attn_sized(cfg: AttnConfig, kv_heads: int) -> AttnConfig:
    """GQA without its own KV heads gets ``kv_heads``; its other settings (a window) are kept. Any other value's KV
    heads follow from the value (MHA: every head, MQA: one, MLA: none but a latent), so a count carried over from
    the GQA it was flipped from (Llama-2's block flipped to MLA) is dropped rather than contradicting it."""
    if cfg.name != "gqa":
        return replace(cfg, n_kv_heads=None) if cfg.n_kv_heads is not None else cfg
    return replace(cfg, n_kv_heads=kv_heads) if cfg.n_kv_heads is None else cfg


ATTN = declare(Choice(
    display={"mha": "MHA", "gqa": "GQA", "mqa": "MQA", "mla": "MLA", "window": "sliding window"},
    group="attn", title="KV heads / query heads", config=AttnConfig, registry=ATTENTIONS, gpt2="mha",
    llama2="gqa", hook="attention", order=40,
    rung=4, sized=_attn_sized, flip_values=("gqa", "mla"), matches=_attn_matches, sweep=False,
    # 64 of the small model's 1024 tokens: a window that the kv sweep's contexts (up to 4096) run well past.
    setting_flips={"window": {"window": 64}},
    about={"mha": "MHA: one K/V head per query head",
           "gqa": "GQA: query heads share K/V heads (`attn.n_kv_heads`)",
           "mqa": "MQA: one K/V head for all query heads",
           "mla": "MLA, DeepSeek-V2's multi-head latent attention: one compressed latent cached per token, K and V "
                  "up-projected from it per head (`attn.kv_lora_rank`, `attn.qk_rope_head_dim`, `attn.q_lora_rank`; "
                  "`bias=on` is DeepSeek-V2's `attention_bias`: the down-projections and the output, never a "
                  "full-rank query)",
           "window": "each query sees only its last W keys (Mistral-7B); decode keeps a rolling cache of W "
                     "positions"},
    claim=Claim(
        "GQA cuts the KV cache 8× at 70B and speeds long-context decode",
        (("arithmetic, Llama-2-70B fp16 at 4096 tokens", "GQA-8: 1.25 GiB; MHA: 10 GiB"),
         ("Ainslie et al. 2023, Table 1",
          "time/sample MHA-XXL 1.51 s, GQA-8 0.28 s, MQA 0.24 s; score 47.2 / 47.1 / 46.6")),
        loss="no worse", evidence="kv_cache",
    ),
    value_claims={
        "mla": Claim(
            "MLA caches a small latent per token instead of K and V, at no loss of quality",
            (("DeepSeek-AI 2024 (DeepSeek-V2), abstract",
              "KV cache reduced by 93.3% against DeepSeek 67B (two different models as deployed, not attention "
              "alone)"),
             ("DeepSeek-AI 2024 (DeepSeek-V2), Table 1 and §2.1",
              "per token and layer: MHA 2·n_h·d_h elements, GQA 2·n_g·d_h, MLA (d_c + d_h^R) = 4.5·d_h "
              "(d_c 512, d_h^R 64, d_h 128)")),
            loss="no worse",
        ),
        "window": Claim(
            "A sliding window bounds the KV cache at W positions however long the context, without hurting quality",
            (("Jiang et al. 2023 (Mistral 7B), §2",
              "window W = 4096; a rolling buffer cache of W positions: on a sequence of 32k tokens, cache memory "
              "8× smaller, without impacting model quality"),),
            loss="no worse",
        ),
    },
))
