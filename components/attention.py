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
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from components.choice import Choice, Claim, declare, hook_classes, hook_modules
from components.config import ArchConfig, ConfigError
from components.positions import Rotation, ScoreBias, apply_rotation
from components.registry import Registry
from components.work import Step, Work, linear

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

    def kv_heads(self, n_heads: int) -> int:
        return resolve_kv_heads(self, n_heads)


def resolve_kv_heads(attn: AttnConfig, n_heads: int) -> int:
    """KV heads for an attention variant: MHA has one per query head, MQA one in all, GQA in between."""
    kv = attn.n_kv_heads
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
        raise ConfigError(f"attn=gqa needs attn.n_kv_heads: a divisor of model.n_heads={n_heads}")
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
        """K and V bytes one token adds over all layers and the whole batch."""
        return self.nbytes // self.max_seq_len

    def clone(self) -> KVCache:
        """The same contents and position in newly allocated memory."""
        other = copy.copy(self)
        other.k, other.v = self.k.clone(), self.v.clone()
        return other

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's K/V at ``pos`` and return views of everything cached so far for ``layer``."""
        end = self.pos + k.shape[2]
        if end > self.max_seq_len:
            raise ValueError(f"KV cache holds {self.max_seq_len} positions; position {end - 1} does not fit")
        self.k[layer, :, :, self.pos : end] = k
        self.v[layer, :, :, self.pos : end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]


@ATTENTIONS.register("mha")
@ATTENTIONS.register("gqa")
@ATTENTIONS.register("mqa")
class CausalSelfAttention(nn.Module):
    """Multi-head causal attention ``softmax(QK^T / sqrt(d_k)) V`` with n_kv_heads K/V heads.

    MHA, GQA and MQA differ only in ``cfg.n_kv_heads``; with n_kv_heads == n_heads this is exactly MHA.
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
        # The choices that transform each head's Q and K before the rotation (QK-norm), in declaration order.
        self.qk = nn.ModuleList(hook_modules(cfg, "qk"))
        # Keys a query sees: all earlier ones (None), or only the last ``window`` (a sliding window).
        self.window: int | None = None

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        """Projections (K/V's outputs are the cache writes), the core over ``step.keys`` keys, and the Q/K
        transforms of the ``qk`` choices."""
        d, h, kv, hd, bias = cfg.model.d_model, cfg.model.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.bias.enabled
        n = step.tokens
        projections = (linear(d, h * hd, n, bias) + 2 * linear(d, kv * hd, n, bias, write_output=False)
                       + linear(h * hd, d, n, bias))
        core = Work(attention_flops=2 * 2 * step.batch * h * step.seq * step.keys * hd,
                    attention_activations=2 * n * h * hd,  # reads Q, writes its output
                    kv_read=2 * step.batch * kv * step.keys * hd, kv_write=2 * n * kv * hd)
        return sum((cls_.work(cfg, step) for cls_ in hook_classes(cfg, "qk")), projections + core)

    def forward(self, x: torch.Tensor, rotation: Rotation | None = None, cache: KVCache | None = None,
                score_bias: ScoreBias | None = None) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        for transform in self.qk:
            q, k = transform(q, k)
        if rotation is not None:
            q, k = apply_rotation(q, rotation), apply_rotation(k, rotation)
        start = 0
        if cache is not None:
            start = cache.pos
            k, v = cache.update(self.layer, k, v)
        bias = score_bias(start, t, k.shape[2], q.device) if score_bias is not None else None
        if bias is None and self.window is None:
            y = sdpa(q, k, v, start)
        else:
            y = masked_sdpa(q, k, v, start, bias, self.window)
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

    Every cache has ``pos``, ``max_seq_len``, ``nbytes``, ``clone()``, ``tensors()`` and ``randomize_()``.
    """
    cls = ATTENTIONS.get(cfg.attn.name)
    make = getattr(cls, "new_cache", None)
    if make is None:
        return KVCache.for_model(cfg, batch_size, max_seq_len, n_layers, **kw)
    return make(cfg, batch_size, max_seq_len, n_layers, **kw)


def _attn_label(arch: ArchConfig) -> str:
    kv, heads = arch.n_kv_heads, arch.model.n_heads
    return "mha" if kv == heads else "mqa" if kv == 1 else f"gqa{kv}"


def _attn_matches(arch: ArchConfig, value: str) -> bool:
    """By KV heads: ``gqa`` with every head its own KV head is MHA; GQA is any fewer (Llama-2's GQA at the small
    quality model's one KV head of four is still its GQA)."""
    kv, heads = arch.n_kv_heads, arch.model.n_heads
    if value == "gqa":
        return arch.attn.name == "gqa" and kv < heads
    return _attn_label(arch) == value


def _attn_row(arch: ArchConfig) -> dict[str, object]:
    return {"attn": arch.attn.name, "n_kv_heads": arch.n_kv_heads}


def _attn_from_row(row: Mapping[str, object]) -> AttnConfig:
    """By KV heads: a row's ``gqa`` at every head's own KV head is MHA (the kernels and bytes are MHA's)."""
    heads, kv = int(row["n_heads"]), int(row["n_kv_heads"])
    if kv >= heads:
        return AttnConfig("mha")
    return AttnConfig("mqa") if str(row.get("attn")) == "mqa" else AttnConfig("gqa", kv)


def _attn_show(row: Mapping[str, object]) -> str:
    return f"{int(row['n_kv_heads'])} / {int(row['n_heads'])}"


def _attn_sized(cfg: AttnConfig, kv_heads: int) -> AttnConfig:
    return AttnConfig(cfg.name, kv_heads) if cfg.name == "gqa" and cfg.n_kv_heads is None else cfg


ATTN = declare(Choice(
    display={"mha": "MHA", "gqa": "GQA", "mqa": "MQA"},
    group="attn", title="KV heads / query heads", show=_attn_show, config=AttnConfig, registry=ATTENTIONS, gpt2="mha",
    llama2="gqa", hook="attention", order=40,
    rung=4, sized=_attn_sized, flip_values=("gqa",), label=_attn_label, matches=_attn_matches, to_row=_attn_row,
    from_row=_attn_from_row, sweep=False,
    description="K/V heads: one per query head (MHA), shared by groups of query heads (GQA), or one (MQA)",
    claim=Claim(
        "GQA cuts the KV cache 8× at 70B and speeds long-context decode",
        (("arithmetic, Llama-2-70B fp16 at 4096 tokens", "GQA-8: 1.25 GiB; MHA: 10 GiB"),
         ("Ainslie et al. 2023, Table 1",
          "time/sample MHA-XXL 1.51 s, GQA-8 0.28 s, MQA 0.24 s; score 47.2 / 47.1 / 46.6")),
    ),
))
