"""Causal self-attention with 1..n_heads KV heads (MHA, GQA, MQA): its config and its module.

The module projects, transforms, rotates, caches and attends: the kernels it attends with are in
``components.kernels``, its caches in ``components.kv_cache``, and the KV-head rule each value declares in
``components.kv_heads``. A sliding window (``attn.window=W``, Mistral 7B) lets each query see only its last W keys,
its own included (Hugging Face's ``kv_idx > q_idx - W``). No key older than W - 1 positions is ever seen again, so
the model decodes with a ``RollingKVCache``: W positions per layer however long the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from torch import nn

from components.choice import Choice, Claim
from components.config import ArchConfig, ConfigError
from components.declarations import declare, hook_classes, hook_modules
from components.kernels import attend
from components.kv_cache import KVCache, RollingKVCache
from components.kv_heads import ATTENTIONS, CONFIGURED, ONE_IN_ALL, PER_QUERY_HEAD, KVHeads, resolve_kv_heads
from components.mla import check_mla, mla_sizes
from components.positions import POSITIONS, Rotation, ScoreBias, apply_rotation
from components.work import Step, Work, attention_core, linear


@dataclass
class AttnConfig:
    name: str = "mha"  # mha | gqa | mqa | mla
    # K/V heads; None: the value's rule decides (mha: n_heads, mqa: 1; gqa requires a count). Each KV head serves a
    # group of n_heads // n_kv_heads query heads, query head i reading KV head i // group; with 4 query heads:
    #
    #   MHA: 4 q / 4 kv       GQA: 4 q / 2 kv       MQA: 4 q / 1 kv
    #   q0  q1  q2  q3        q0  q1  q2  q3        q0  q1  q2  q3
    #   |   |   |   |         |   |   |   |         |   |   |   |
    #   kv0 kv1 kv2 kv3       [ kv0 ] [ kv1 ]       [     kv0     ]
    n_kv_heads: int | None = None
    # Sliding window (Mistral): each query sees only its last ``window`` keys, its own included. None: every
    # earlier key. Neutral: a point without a window keeps the identity of one written without this setting.
    window: int | None = field(default=None, metadata={"neutral": True})
    # MLA (DeepSeek-V2) sizes; None derives each from head_dim in DeepSeek-V2's proportions (``components.mla``).
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
    if pos in POSITIONS and POSITIONS.traits(pos).bounded_length and window >= n:
        allowed = f"1..{n - 1}" if n > 1 else "none"
        raise ConfigError(f"attn.window={window} never slides with pos={pos}, whose table ends at "
                          f"model.max_seq_len={n}; allowed: {allowed}, or null for no window")


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention ``softmax(QK^T / sqrt(d_k)) V`` with n_kv_heads K/V heads.

    MHA, GQA and MQA differ only in ``arch.n_kv_heads``; with n_kv_heads == n_heads this is exactly MHA. With
    ``arch.attn.window`` = W each query sees only its last W keys, its own included (Mistral 7B; the same keys as
    Hugging Face's ``MistralAttention``: key j is seen by query i iff i - W < j <= i), and decodes with a
    ``RollingKVCache`` (``new_cache``). The subclasses below register it as mha, gqa and mqa, each with its rule.
    """

    # The KV-head rule of the value this class is registered as (``components.kv_heads``); None: a plugin's value.
    kv_heads_rule: KVHeads | None = None

    def __init__(self, arch: ArchConfig, layer: int = 0) -> None:
        super().__init__()
        d, bias = arch.model.d_model, arch.bias.enabled
        self.n_heads, self.n_kv_heads, self.head_dim = arch.model.n_heads, arch.n_kv_heads, arch.head_dim
        self.layer = layer
        # Separate projections (Llama's wq/wk/wv) so GQA's smaller K/V weights are visible in counts.
        self.q = nn.Linear(d, self.n_heads * self.head_dim, bias=bias)
        self.k = nn.Linear(d, self.n_kv_heads * self.head_dim, bias=bias)
        self.v = nn.Linear(d, self.n_kv_heads * self.head_dim, bias=bias)
        self.out = nn.Linear(self.n_heads * self.head_dim, d, bias=bias)
        # The choices that transform each head's Q, K and V right after the projections (Primer's convolutions):
        # registered only when one builds a module, so attention without one keeps its modules exactly.
        projected = hook_modules(arch, "qkv")
        if projected:
            self.qkv = nn.ModuleList(projected)
        # The choices that transform each head's Q and K before the rotation (QK-norm), in declaration order.
        self.qk = nn.ModuleList(hook_modules(arch, "qk"))
        # The choices that transform the scores (a soft cap): registered only when one builds a module, so attention
        # without one keeps its modules and its fused SDPA paths exactly.
        transforms = hook_modules(arch, "scores")
        if transforms:
            self.scores = nn.ModuleList(transforms)
        # Keys a query sees: all earlier ones (None), or only the last ``window`` (a sliding window).
        self.window: int | None = arch.attn.window

    @classmethod
    def new_cache(cls, arch: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                  n_layers: int | None = None, **kw: object) -> KVCache:
        """Every position's K/V (``KVCache``), or with a window only the last ``window`` positions'
        (``RollingKVCache``): what no query will see again need not be kept."""
        make = KVCache if arch.attn.window is None else RollingKVCache
        return make.for_model(arch, batch_size, max_seq_len, n_layers, **kw)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        """Projections (K/V's outputs are the cache writes), the core, and the transforms of the ``qkv``, ``qk`` and
        ``scores`` choices.

        The core counts every query against ``step.keys`` keys, the full T x S score matrix of the conventions
        (causal masking is not subtracted); a window of W caps that at W keys a query. So a window at least as long
        as the context counts exactly as no window, and a decode step counts the min(keys, W) keys it reads. The
        keys the step holds are every key some query of it sees, once: the last W - 1 keys before the step and its
        own. The cache read is those; and where a window hides some of them, ``masked_sdpa`` scores them all (a
        dense kernel under a mask), so the executed work counts every held key a query (``masked_flops``).
        """
        d, h, kv, hd, bias = arch.model.d_model, arch.model.n_heads, arch.n_kv_heads, arch.head_dim, arch.bias.enabled
        n, window = step.tokens, arch.attn.window
        per_query, held = step.keys, step.keys
        if window is not None:
            per_query, held = min(step.keys, window), min(step.keys, step.seq + window - 1)
        projections = (linear(d, h * hd, n, bias) + 2 * linear(d, kv * hd, n, bias, write_output=False)
                       + linear(h * hd, d, n, bias))
        core = attention_core(step.batch, h, step.seq, per_query, hd, hd, executed_keys=held) + Work(
            attention_activations=2 * n * h * hd,  # reads Q, writes its output
            kv_read=2 * step.batch * kv * held * hd, kv_write=2 * n * kv * hd)
        transforms = [*hook_classes(arch, "qkv"), *hook_classes(arch, "qk"), *hook_classes(arch, "scores")]
        return sum((cls_.work(arch, step) for cls_ in transforms), projections + core)

    def forward(self, x: torch.Tensor, rotation: Rotation | None = None, cache: KVCache | None = None,
                score_bias: ScoreBias | None = None) -> torch.Tensor:
        """Project, transform (the ``qkv`` and ``qk`` choices), rotate, cache, attend, project out."""
        b, t, _ = x.shape
        # K and V have n_kv_heads heads and are never copied per query head: the kernels fold query head i onto KV
        # head i // group (``components.kernels.fold_queries``).
        q = self.q(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        for projected in self._modules.get("qkv") or ():
            q, k, v = projected(q, k, v)
        for transform in self.qk:
            q, k = transform(q, k)
        if rotation is not None:
            q, k = apply_rotation(q, rotation), apply_rotation(k, rotation)
        if cache is not None:
            k, v = cache.update(self.layer, k, v)
        bias = None if score_bias is None else _keys_bias(score_bias, t, k.shape[2], q.device, cache)
        y = attend(q, k, v, bias, self.window, self._modules.get("scores"))
        return self.out(y.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim))


def _keys_bias(score_bias: ScoreBias, t: int, s: int, device: torch.device, cache: KVCache | None) -> torch.Tensor:
    """The score bias of a step's t queries over its s keys, laid out as the keys are.

    The keys end with the step's own, so query j sits at key position s - t + j; the bias is asked with the first
    key at position 0 (a rolling cache left out the keys before it), which changes nothing: it depends on the
    distance i - j alone (``ScoreBias``). A rolling cache's single-token step holds its keys in slot order, and the
    bias follows them there (``keys_rolled``).
    """
    bias = score_bias(s - t, t, s, device)
    roll = cache.keys_rolled(t, s) if cache is not None else 0
    return bias.roll(roll, dims=-1) if roll else bias


@ATTENTIONS.register("mha")
class MultiHeadAttention(CausalSelfAttention):
    """MHA (GPT-2, Llama-2 7B): one K/V head per query head."""

    kv_heads_rule = KVHeads(PER_QUERY_HEAD, why="which has n_kv_heads = model.n_heads = {n_heads}",
                            instead="use attn=gqa for fewer KV heads")


@ATTENTIONS.register("gqa")
class GroupedQueryAttention(CausalSelfAttention):
    """GQA (Ainslie et al. 2023; Llama-2 70B): each K/V head shared by a group of query heads."""

    kv_heads_rule = KVHeads(CONFIGURED, required=True)


@ATTENTIONS.register("mqa")
class MultiQueryAttention(CausalSelfAttention):
    """MQA (Shazeer 2019): one K/V head for all query heads."""

    kv_heads_rule = KVHeads(ONE_IN_ALL, why="which has 1", instead="use attn=gqa")


def build_attention(arch: ArchConfig, layer: int = 0) -> nn.Module:
    return ATTENTIONS.get(arch.attn.name)(arch, layer)


def new_cache(arch: ArchConfig, batch_size: int, max_seq_len: int | None = None, n_layers: int | None = None,
              **kw: object) -> KVCache:
    """The cache ``arch``'s attention decodes with (``n_layers`` defaults to the model's), from its class's own
    ``new_cache``: what a cache holds per token is the attention's business (K/V heads, a latent, a window).

    Every cache has ``pos``, ``max_seq_len``, ``nbytes``, ``bytes_per_token()``, ``clone()``, ``tensors()``,
    ``randomize_()`` and ``update(...)``.
    """
    cls = ATTENTIONS.get(arch.attn.name)
    make = getattr(cls, "new_cache", None)
    if make is None:
        return KVCache.for_model(arch, batch_size, max_seq_len, n_layers, **kw)
    return make(arch, batch_size, max_seq_len, n_layers, **kw)


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


def _attn_sized(attn: AttnConfig, kv_heads: int) -> AttnConfig:
    """GQA without its own KV heads gets ``kv_heads``; its other settings (a window) are kept. Any other value's KV
    heads follow from the value (MHA: every head, MQA: one, MLA: none but a latent), so a count carried over from
    the GQA it was flipped from (Llama-2's block flipped to MLA) is dropped rather than contradicting it."""
    if attn.name != "gqa":
        return replace(attn, n_kv_heads=None) if attn.n_kv_heads is not None else attn
    return replace(attn, n_kv_heads=kv_heads) if attn.n_kv_heads is None else attn


ATTN = declare(Choice(
    display={"mha": "MHA", "gqa": "GQA", "mqa": "MQA", "mla": "MLA", "window": "sliding window"},
    group="attn", title="KV heads / query heads", config=AttnConfig, registry=ATTENTIONS, gpt2="mha",
    llama2="gqa", hook="attn", order=40,
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
        loss="no worse", evidence="kv_cache", sweep="kv",
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
