"""Multi-head latent attention (MLA; DeepSeek-V2, arXiv 2405.04434 §2.1) and its latent cache.

Why a latent: decode is bound by reading the KV cache, and MHA caches ``2 * n_heads * head_dim`` values per token
and layer. MLA compresses K and V jointly into one latent ``c_kv`` of ``kv_lora_rank`` values (RMS-normalised, as
DeepSeek), from which each head's K and V are up-projected. Rotating that K would put a position-dependent
rotation between the K up-projection and the query, and the up-projection could no longer be absorbed (below;
DeepSeek-V2 §2.1.3), so position enters through a separate *decoupled* RoPE key of ``qk_rope_head_dim`` values,
rotated once and shared by every head, with a matching rotated part in each head's query. The cache holds only
``c_kv`` and the rotated key: ``kv_lora_rank + qk_rope_head_dim`` values per token and layer (DeepSeek-V2:
512 + 64 = 576, against MHA's 2 x 128 x 128 = 32768 at its 128 heads of 128), while each head still has its own K
and V.

Two paths compute the same attention:

- **reference** (``expanded``): up-project K and V of every key per head and run ordinary causal attention over
  ``n_heads`` heads of ``head_dim + qk_rope_head_dim``. Used for prefills longer than ``FOLD_MAX_QUERIES``: there
  the core dominates, and each score and value costs ``head_dim + rope + head_dim`` here against the absorbed
  path's ``kv_lora_rank + rope + kv_lora_rank`` (3.4x at DeepSeek-V2's sizes), while the up-projection per key is
  paid once per token. Kept as what the other is tested against.
- **absorbed**: ``q_nope · (W_UK c) = (W_UK^T q_nope) · c``, so the K up-projection is folded into the query
  (``q_lat = q_nope @ W_UK`` per head, ``kv_lora_rank`` wide) and the V up-projection into the output
  (``y = (softmax · c) @ W_UV^T``). Attention then runs over the cached rows themselves, as one KV head shared by
  every query head (MQA-like: keys are the latent plus the RoPE key, values the latent), so a decode step reads
  each cached value once and never expands the cache. Used for steps of at most ``FOLD_MAX_QUERIES`` new tokens.

Sizes here: K's non-rotated part and V are ``head_dim = d_model / n_heads`` per head (the MHA this replaces);
``kv_lora_rank`` defaults to 4 heads' width and ``qk_rope_head_dim`` to half a head (DeepSeek-V2's 512 and 64 at
128 per head); ``q_lora_rank`` null keeps a full-rank query (DeepSeek-V2-Lite), set it to compress the query too
(DeepSeek-V2: 1536, with its own RMSNorm). The scores are scaled by ``1/sqrt(head_dim + qk_rope_head_dim)``.

RoPE: only the decoupled parts rotate, at ``qk_rope_head_dim``'s own frequencies (``pos.theta``), in the layout of
the rotation the decoder passes (``pos.layout``; DeepSeek's and Hugging Face's MLA rotate interleaved pairs), at
positions ``cache.pos..`` (0 without a cache). The decoder's rotation tables are ``head_dim``-wide and are not
used: a rotation passed in says only that positions rotate and how the pairs are laid out. With no rotation
(``pos`` learned, none or ALiBi) the decoupled parts are simply one more non-rotated slice of the scores; ALiBi's
score bias is added to the scores on both paths.

Not here from DeepSeek-V2: its MoE FFN (DeepSeekMoE) and YaRN's context extension (its RoPE scaling and the
matching softmax-scale factor); ``attn.window`` and a ``qk`` transform (QK-norm) are refused with ``attn=mla``.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from components.attention import ATTENTIONS, FOLD_MAX_QUERIES, MLASizes, mla_sizes
from components.config import ArchConfig
from components.norms import RMSNorm
from components.positions import Rotation, ScoreBias, apply_rotation
from components.work import Step, Work, attention_core, linear, norm

# DeepSeek-V2's ``rms_norm_eps`` (and Hugging Face's ``DeepseekV2RMSNorm`` default) for the latents' norms; the
# block's own norms keep ``norm.eps``.
LATENT_NORM_EPS = 1e-6


class LatentCache:
    """What MLA caches: per layer, sequence and position, the normalised latent ``c_kv`` followed by the rotated
    RoPE key: shape (layers, batch, max_len, kv_lora_rank + qk_rope_head_dim).

    The interface of ``KVCache``: ``pos`` is the number of positions filled, layers write at ``pos`` during a
    forward, the model advances it after the last layer, and setting it back rewinds the cache.
    """

    def __init__(self, n_layers: int, batch_size: int, max_seq_len: int, width: int,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        self.latent = torch.zeros((n_layers, batch_size, max_seq_len, width), dtype=dtype, device=device)
        self.max_seq_len = max_seq_len
        self.pos = 0

    @classmethod
    def for_model(cls, cfg: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                  n_layers: int | None = None, **kw: object) -> LatentCache:
        width = mla_sizes(cfg.attn, cfg.head_dim).latent
        return cls(n_layers or cfg.model.n_layers, batch_size, max_seq_len or cfg.model.max_seq_len, width, **kw)

    def tensors(self) -> list[torch.Tensor]:
        return [self.latent]

    def randomize_(self) -> None:
        """Random contents: decode cost does not depend on the cached values, so timing needs no prefill."""
        self.latent.normal_()

    @property
    def nbytes(self) -> int:
        return self.latent.nbytes

    def bytes_per_token(self) -> int:
        """Latent and RoPE-key bytes one token adds over all layers and the whole batch."""
        return self.nbytes // self.max_seq_len

    def clone(self) -> LatentCache:
        """The same contents and position in newly allocated memory."""
        other = copy.copy(self)
        other.latent = self.latent.clone()
        return other

    def update(self, layer: int, latent: torch.Tensor) -> torch.Tensor:
        """Write this step's rows (batch, t, width) at ``pos``; return a view of every row cached so far for
        ``layer``, (batch, pos + t, width)."""
        end = self.pos + latent.shape[1]
        if end > self.max_seq_len:
            raise ValueError(f"latent cache holds {self.max_seq_len} positions; position {end - 1} does not fit")
        self.latent[layer, :, self.pos : end] = latent
        return self.latent[layer, :, :end]


def _seen(start: int, t: int, s: int, device: torch.device) -> torch.Tensor:
    """(t, s) bool: query ``start + i`` sees key ``j`` iff ``j <= start + i`` (keys 0..s-1)."""
    queries = torch.arange(start, start + t, device=device)[:, None]
    return torch.arange(s, device=device)[None, :] <= queries


def _scores_mask(start: int, t: int, s: int, bias: torch.Tensor | None, dtype: torch.dtype,
                 device: torch.device) -> torch.Tensor | None:
    """The additive (heads, t, s) mask: -inf for unseen keys plus ``bias`` (ALiBi's); a bool (t, s) mask without a
    bias; None when every key is seen (one new token after its cache)."""
    if bias is None:
        return None if t == 1 and s == start + 1 else _seen(start, t, s, device)
    mask = torch.zeros(t, s, dtype=dtype, device=device).masked_fill(~_seen(start, t, s, device), float("-inf"))
    return mask + bias.to(dtype)


@ATTENTIONS.register("mla")
class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2's MLA: K and V from one cached latent per token, a decoupled RoPE key shared by the heads.

    Parameters (Hugging Face's ``DeepseekV2Attention`` names in brackets): ``q`` [q_proj] or ``q_down``, ``q_norm``,
    ``q_up`` [q_a_proj, q_a_layernorm, q_b_proj] to ``n_heads x (head_dim + rope)``, each head's query nope part
    first; ``kv_down`` [kv_a_proj_with_mqa] to ``kv_lora_rank + rope`` (the latent, then the RoPE key); ``kv_norm``
    [kv_a_layernorm]; ``kv_up`` [kv_b_proj] to ``n_heads x (head_dim + head_dim)``, each head's K nope part then its
    V; ``out`` [o_proj]. ``bias.enabled`` is DeepSeek-V2's ``attention_bias``: a bias on the down-projections and the
    output (``q_down``, ``kv_down``, ``out``) only. The full-rank query ``q`` never has one (DeepSeek-V2's ``q_proj``
    is ``bias=False`` whatever ``attention_bias``), nor have the up-projections from a normalised latent.
    """

    def __init__(self, cfg: ArchConfig, layer: int = 0) -> None:
        super().__init__()
        d, bias = cfg.model.d_model, cfg.bias.enabled
        self.sizes: MLASizes = mla_sizes(cfg.attn, cfg.head_dim)
        s = self.sizes
        self.n_heads, self.head_dim, self.layer = cfg.model.n_heads, s.head_dim, layer
        q_width = self.n_heads * (s.head_dim + s.rope_dim)
        if s.q_lora_rank is None:
            self.q = nn.Linear(d, q_width, bias=False)  # DeepSeek-V2's q_proj: never a bias
        else:
            self.q_down = nn.Linear(d, s.q_lora_rank, bias=bias)
            self.q_norm = RMSNorm(s.q_lora_rank, eps=LATENT_NORM_EPS)
            self.q_up = nn.Linear(s.q_lora_rank, q_width, bias=False)
        self.kv_down = nn.Linear(d, s.latent, bias=bias)
        self.kv_norm = RMSNorm(s.kv_lora_rank, eps=LATENT_NORM_EPS)
        self.kv_up = nn.Linear(s.kv_lora_rank, self.n_heads * 2 * s.head_dim, bias=False)
        self.out = nn.Linear(self.n_heads * s.head_dim, d, bias=bias)
        self.scale = 1.0 / math.sqrt(s.head_dim + s.rope_dim)
        # The decoupled RoPE's frequencies at its own width, as ``RotaryPositions`` computes them for a head; the
        # tables are a plain dict, not buffers, so ``.to(bfloat16)`` cannot round them, filled per device.
        steps = torch.arange(0, s.rope_dim, 2, dtype=torch.float64, device="cpu")
        self.inv_freq = 1.0 / (cfg.pos.theta ** (steps / s.rope_dim))
        self.max_seq_len = cfg.model.max_seq_len
        self._tables: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    @classmethod
    def new_cache(cls, cfg: ArchConfig, batch_size: int, max_seq_len: int | None = None, n_layers: int | None = None,
                  **kw: object) -> LatentCache:
        """The latent cache: ``kv_lora_rank + qk_rope_head_dim`` values per token and layer."""
        return LatentCache.for_model(cfg, batch_size, max_seq_len, n_layers, **kw)

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        """The path that runs at ``step``: the absorbed one for at most ``FOLD_MAX_QUERIES`` new tokens, else the
        reference. Both: the query projection(s), ``kv_down`` (its output is the cache write, ``kv_write``: latent
        plus RoPE key per new token) and the latent norms, ``out``; ``kv_read``: the latent and RoPE key of every key
        attended to, read once for all heads.

        Absorbed: the per-head ``W_UK`` and ``W_UV`` products (``kv_up``'s weights, read once), the core over
        ``kv_lora_rank + rope`` (scores) and ``kv_lora_rank`` (values). Reference: ``kv_up`` over every key (its
        input is the cache read; its output, each head's K nope and V, is read by the core with the shared RoPE
        key), the core over ``head_dim + rope`` and ``head_dim``.
        """
        s = mla_sizes(cfg.attn, cfg.head_dim)
        d, h, bias = cfg.model.d_model, cfg.model.n_heads, cfg.bias.enabled
        hd, r, lat = s.head_dim, s.rope_dim, s.kv_lora_rank
        n, keys = step.tokens, step.batch * step.keys  # new tokens; (sequence, key) pairs attended to
        if s.q_lora_rank is None:
            query = linear(d, h * (hd + r), n, False)
        else:
            query = (linear(d, s.q_lora_rank, n, bias) + norm(s.q_lora_rank, n, s.q_lora_rank)
                     + linear(s.q_lora_rank, h * (hd + r), n, False))
        projections = (query + linear(d, s.latent, n, bias, write_output=False) + norm(lat, n, lat)
                       + linear(h * hd, d, n, bias))
        cache = Work(kv_read=keys * s.latent, kv_write=n * s.latent)
        if step.seq <= FOLD_MAX_QUERIES:
            # q_nope @ W_UK and o_lat @ W_UV^T: per head, head_dim x kv_lora_rank each way.
            absorbed = Work(linear_flops=2 * 2 * n * h * hd * lat, weights=2 * h * hd * lat,
                            linear_activations=2 * (n * h * hd + n * h * lat))
            core = attention_core(step.batch, h, step.seq, step.keys, s.latent, lat) + Work(
                attention_activations=n * h * s.latent + n * h * lat)  # reads q_lat+q_rope, writes o_lat
            return projections + cache + absorbed + core
        up = Work(linear_flops=2 * keys * lat * 2 * h * hd, weights=lat * 2 * h * hd,
                  linear_activations=keys * 2 * h * hd)
        core = attention_core(step.batch, h, step.seq, step.keys, hd + r, hd) + Work(
            attention_activations=n * h * (hd + r) + keys * h * (hd + r + hd) + n * h * hd)
        return projections + cache + up + core

    def _rope(self, start: int, t: int, device: torch.device, layout: str) -> Rotation:
        if device not in self._tables:
            # Built outside inference mode even when first asked for there, so training can reuse it.
            with torch.inference_mode(False):
                pos = torch.arange(self.max_seq_len, dtype=torch.float64, device="cpu")
                angles = torch.outer(pos, self.inv_freq)
                self._tables[device] = (angles.cos().to(device, torch.float32), angles.sin().to(device, torch.float32))
        cos, sin = self._tables[device]
        return Rotation(cos[start : start + t], sin[start : start + t], layout)

    def _queries(self, x: torch.Tensor) -> torch.Tensor:
        if self.sizes.q_lora_rank is None:
            return self.q(x)
        return self.q_up(self.q_norm(self.q_down(x)))

    def forward(self, x: torch.Tensor, rotation: Rotation | None = None, cache: LatentCache | None = None,
                score_bias: ScoreBias | None = None, absorbed: bool | None = None) -> torch.Tensor:
        """``absorbed`` chooses the path (None: absorbed for at most ``FOLD_MAX_QUERIES`` new tokens); both write
        the cache and give the same result."""
        b, t, _ = x.shape
        s, h = self.sizes, self.n_heads
        start = cache.pos if cache is not None else 0
        q = self._queries(x).view(b, t, h, s.head_dim + s.rope_dim).transpose(1, 2)
        q_nope, q_rope = q.split([s.head_dim, s.rope_dim], dim=-1)
        c_kv, k_rope = self.kv_down(x).split([s.kv_lora_rank, s.rope_dim], dim=-1)
        k_rope = k_rope.unsqueeze(1)  # (b, 1, t, rope): one key for every head
        if rotation is not None:
            rot = self._rope(start, t, x.device, rotation.layout)
            q_rope, k_rope = apply_rotation(q_rope, rot), apply_rotation(k_rope, rot)
        latent = torch.cat((self.kv_norm(c_kv), k_rope.squeeze(1)), dim=-1)  # (b, t, kv_lora_rank + rope)
        if cache is not None:
            latent = cache.update(self.layer, latent)
        keys = latent.shape[1]
        bias = score_bias(start, t, keys, x.device) if score_bias is not None else None
        if absorbed is None:
            absorbed = t <= FOLD_MAX_QUERIES
        if absorbed:
            y = self._absorbed(q_nope, q_rope, latent, start, bias)
        else:
            y = self._expanded(q_nope, q_rope, latent, start, bias)
        return self.out(y.transpose(1, 2).reshape(b, t, h * s.head_dim))

    def _up_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``kv_up``'s weight as W_UK and W_UV, each (heads, head_dim, kv_lora_rank): per head, K nope then V."""
        w = self.kv_up.weight.view(self.n_heads, 2 * self.head_dim, self.sizes.kv_lora_rank)
        return w[:, : self.head_dim], w[:, self.head_dim :]

    def _absorbed(self, q_nope: torch.Tensor, q_rope: torch.Tensor, latent: torch.Tensor, start: int,
                  bias: torch.Tensor | None) -> torch.Tensor:
        """Attention over the cached rows: every head's query against one shared key row (latent + RoPE key), the
        latent as the value; heads folded into SDPA's query dimension (row ``i * t + j`` is head i, query j)."""
        b, h, t, _ = q_nope.shape
        lat, keys = self.sizes.kv_lora_rank, latent.shape[1]
        w_uk, w_uv = self._up_weights()
        q_lat = torch.einsum("bhtd,hdl->bhtl", q_nope, w_uk)
        query = torch.cat((q_lat, q_rope), dim=-1).reshape(b, 1, h * t, self.sizes.latent)
        kv = latent.unsqueeze(1)  # (b, 1, s, lat + rope): SDPA reads the values as its first lat columns
        mask = _scores_mask(start, t, keys, bias, query.dtype, query.device)
        if mask is not None:
            mask = mask.repeat(h, 1) if mask.dim() == 2 else mask.reshape(h * t, keys)
        o_lat = F.scaled_dot_product_attention(query, kv, kv[..., :lat], attn_mask=mask, scale=self.scale)
        return torch.einsum("bhtl,hdl->bhtd", o_lat.view(b, h, t, lat), w_uv)

    def _expanded(self, q_nope: torch.Tensor, q_rope: torch.Tensor, latent: torch.Tensor, start: int,
                  bias: torch.Tensor | None) -> torch.Tensor:
        """The reference: each head's K (nope, then the shared RoPE key) and V up-projected for every key, then
        ordinary causal attention."""
        b, h, t, _ = q_nope.shape
        hd, keys = self.head_dim, latent.shape[1]
        c_kv, k_rope = latent.split([self.sizes.kv_lora_rank, self.sizes.rope_dim], dim=-1)
        kv = self.kv_up(c_kv).view(b, keys, h, 2 * hd).transpose(1, 2)
        k_nope, v = kv.split([hd, hd], dim=-1)
        k = torch.cat((k_nope, k_rope.unsqueeze(1).expand(b, h, keys, -1)), dim=-1)
        q = torch.cat((q_nope, q_rope), dim=-1)
        mask = _scores_mask(start, t, keys, bias, q.dtype, q.device)
        if mask is not None and mask.dtype == torch.bool and start == 0 and t == keys:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
