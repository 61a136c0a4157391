"""Multi-head latent attention (MLA; DeepSeek-V2, arXiv 2405.04434 §2.1): its sizes, its checks and its module.

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
The latent cache is ``components.kv_cache.LatentCache``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from components.config import ArchConfig, ConfigError
from components.declarations import choices
from components.kernels import FOLD_MAX_QUERIES, step_mask
from components.kv_cache import LatentCache
from components.kv_heads import ATTENTIONS, PER_QUERY_HEAD, AttnSetting, KVHeads
from components.norms import RMSNorm
from components.positions import RopeTables, Rotation, ScoreBias, apply_rotation
from components.work import Step, Work, attention_core, linear, norm

# DeepSeek-V2's ``rms_norm_eps`` (and Hugging Face's ``DeepseekV2RMSNorm`` default) for the latents' norms; the
# block's own norms keep ``norm.eps``.
LATENT_NORM_EPS = 1e-6


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


def mla_sizes(attn: AttnSetting, head_dim: int) -> MLASizes:
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


def check_mla(attn: AttnSetting, arch: ArchConfig) -> None:
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
    for choice in choices():
        if choice.hook in _NOT_WITH_MLA and choice.registry.get(getattr(arch, choice.group).name) is not None:
            raise ConfigError(f"{choice.group}={getattr(arch, choice.group).name} is not supported with attn=mla: "
                              f"{_NOT_WITH_MLA[choice.hook]}; use {choice.group}={choice.gpt2}")


# The attention hooks MLA's module does not offer, and why.
_NOT_WITH_MLA = {
    "qk": "its decode path never forms a head's K (the up-projection is absorbed into the query), so K cannot be "
          "normalised per head",
    "scores": "its scores come from its own absorbed and expanded paths, which take no score transform",
    "qkv": "its K and V are up-projections of one cached latent (absorbed into the query and the output when it "
           "decodes), so no head's K or V is formed to transform",
}


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

    # One KV head per query head: each head's K and V are up-projected from the shared latent (as Hugging Face's
    # ``DeepseekV2Config`` sets ``num_key_value_heads``), so MLA's rows are never taken for GQA/MQA rows. Its cache
    # holds the latent, sized by ``attn.kv_lora_rank``, never by these heads.
    kv_heads_rule = KVHeads(PER_QUERY_HEAD, why="its K and V are up-projected per head from one shared latent, sized "
                            "by attn.kv_lora_rank", instead="leave it null", settable=False)

    def __init__(self, arch: ArchConfig, layer: int = 0) -> None:
        super().__init__()
        d, bias = arch.model.d_model, arch.bias.enabled
        self.sizes: MLASizes = mla_sizes(arch.attn, arch.head_dim)
        s = self.sizes
        self.n_heads, self.head_dim, self.layer = arch.model.n_heads, s.head_dim, layer
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
        # The decoupled RoPE key's angles at its own width, as ``RotaryPositions`` has them at a head's.
        self.rope = RopeTables(s.rope_dim, arch.pos.theta, arch.model.max_seq_len)

    @classmethod
    def new_cache(cls, arch: ArchConfig, batch_size: int, max_seq_len: int | None = None, n_layers: int | None = None,
                  **kw: object) -> LatentCache:
        """The latent cache: ``kv_lora_rank + qk_rope_head_dim`` values per token and layer."""
        return LatentCache(n_layers or arch.model.n_layers, batch_size, max_seq_len or arch.model.max_seq_len,
                           mla_sizes(arch.attn, arch.head_dim).latent, **kw)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        """The path that runs at ``step``: the absorbed one for at most ``FOLD_MAX_QUERIES`` new tokens, else the
        reference. Both: the query projection(s), ``kv_down`` (its output is the cache write, ``kv_write``: latent
        plus RoPE key per new token) and the latent norms, ``out``; ``kv_read``: the latent and RoPE key of every key
        attended to, read once for all heads.

        Absorbed: the per-head ``W_UK`` and ``W_UV`` products (``kv_up``'s weights, read once), the core over
        ``kv_lora_rank + rope`` (scores) and ``kv_lora_rank`` (values). Reference: ``kv_up`` over every key (its
        input is the cache read; its output, each head's K nope and V, is read by the core with the shared RoPE
        key), the core over ``head_dim + rope`` and ``head_dim``.
        """
        s = mla_sizes(arch.attn, arch.head_dim)
        d, h, bias = arch.model.d_model, arch.model.n_heads, arch.bias.enabled
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
            rot = self.rope.rotation(start, t, x.device, rotation.layout)
            q_rope, k_rope = apply_rotation(q_rope, rot), apply_rotation(k_rope, rot)
        latent = torch.cat((self.kv_norm(c_kv), k_rope.squeeze(1)), dim=-1)  # (b, t, kv_lora_rank + rope)
        if cache is not None:
            latent = cache.update(self.layer, latent)
        keys = latent.shape[1]  # positions 0..start + t - 1: they end with the step's own, as ``step_mask`` assumes
        bias = score_bias(start, t, keys, x.device) if score_bias is not None else None
        if absorbed is None:
            absorbed = t <= FOLD_MAX_QUERIES
        if absorbed:
            y = self._absorbed(q_nope, q_rope, latent, bias)
        else:
            y = self._expanded(q_nope, q_rope, latent, bias)
        return self.out(y.transpose(1, 2).reshape(b, t, h * s.head_dim))

    def _up_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``kv_up``'s weight as W_UK and W_UV, each (heads, head_dim, kv_lora_rank): per head, K nope then V."""
        w = self.kv_up.weight.view(self.n_heads, 2 * self.head_dim, self.sizes.kv_lora_rank)
        return w[:, : self.head_dim], w[:, self.head_dim :]

    def _absorbed(self, q_nope: torch.Tensor, q_rope: torch.Tensor, latent: torch.Tensor,
                  bias: torch.Tensor | None) -> torch.Tensor:
        """Attention over the cached rows: every head's query against one shared key row (latent + RoPE key), the
        latent as the value; heads folded into SDPA's query dimension (row ``i * t + j`` is head i, query j)."""
        b, h, t, _ = q_nope.shape
        lat, keys = self.sizes.kv_lora_rank, latent.shape[1]
        w_uk, w_uv = self._up_weights()
        q_lat = torch.einsum("bhtd,hdl->bhtl", q_nope, w_uk)
        query = torch.cat((q_lat, q_rope), dim=-1).reshape(b, 1, h * t, self.sizes.latent)
        kv = latent.unsqueeze(1)  # (b, 1, s, lat + rope): SDPA reads the values as its first lat columns
        mask = step_mask(t, keys, bias, query.dtype, query.device)
        if mask is not None:
            mask = mask.repeat(h, 1) if mask.dim() == 2 else mask.reshape(h * t, keys)
        o_lat = F.scaled_dot_product_attention(query, kv, kv[..., :lat], attn_mask=mask, scale=self.scale)
        return torch.einsum("bhtl,hdl->bhtd", o_lat.view(b, h, t, lat), w_uv)

    def _expanded(self, q_nope: torch.Tensor, q_rope: torch.Tensor, latent: torch.Tensor,
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
        mask = step_mask(t, keys, bias, q.dtype, q.device)
        if mask is not None and mask.dtype == torch.bool and t == keys:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
