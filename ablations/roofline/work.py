"""FLOPs and bytes moved by one call of the timed unit, counted analytically from the architecture.

FLOPs (as ``torch.utils.flop_counter``): a multiply-add is 2; only matrix products count; attention counts the
full T x S score matrix (QK^T and PV).

Bytes moved, the model this harness states in every report, per call, in the run's dtype:

- **weights**: every parameter read once per call, except that a learned position table contributes only
  the T rows the call looks up (not its max_seq_len x d);
- **KV cache**: attention reads K and V of every key it attends to (S per sequence) and the K/V
  projections write the T new ones (into the cache, or as activations without one);
- **activations**: each linear layer reads its input and writes its output (an input read by several
  matrices, q/k/v or SwiGLU's gate/up, is read once per matrix); each norm reads and writes N x d;
  attention reads Q and writes its output; the T x S scores stay on chip (fused kernels); elementwise ops
  (residual adds, GELU/SiLU, RoPE, the position add) are not counted: a fusing compiler removes them.
- **train** (forward + backward): three times the forward's bytes in each category, as for FLOPs (backward
  reads the weights again and writes their gradients; it reads and writes about twice the activations).

N = batch x T new tokens. The language model's head (d x vocab) and embedding lookup (N rows) are added
only when asked (``lm_head``): the harness times the decoder alone.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from components import ArchConfig

MODES = ("forward", "train", "prefill", "decode")


@dataclass(frozen=True)
class Work:
    """One call's FLOPs and bytes, split by the part of the model that moves them."""

    linear_flops: int
    attention_flops: int
    weight_bytes: int
    linear_activation_bytes: int
    attention_activation_bytes: int
    norm_bytes: int
    kv_read_bytes: int
    kv_write_bytes: int
    tokens: int  # N: the rows of every matrix product, which decides how efficient it can be

    @property
    def flops(self) -> int:
        return self.linear_flops + self.attention_flops

    @property
    def activation_bytes(self) -> int:
        return self.linear_activation_bytes + self.attention_activation_bytes + self.norm_bytes

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.activation_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes

    def times(self, k: int) -> Work:
        return Work(**{f.name: getattr(self, f.name) * (1 if f.name == "tokens" else k) for f in fields(self)})


def layer_weights(cfg: ArchConfig) -> tuple[int, int]:
    """(matrix elements, vector elements: biases and norm weights) of one block."""
    d, hd, h, kv, ff = cfg.model.d_model, cfg.head_dim, cfg.model.n_heads, cfg.n_kv_heads, cfg.ffn_hidden
    ffn_mats = 3 if cfg.ffn.name == "swiglu" else 2
    matrices = 2 * d * h * hd + 2 * d * kv * hd + ffn_mats * d * ff
    biases = (h * hd + 2 * kv * hd + d + (ffn_mats - 1) * ff + d) if cfg.bias.enabled else 0
    return matrices, biases + 2 * norm_params(cfg)


def norm_params(cfg: ArchConfig) -> int:
    return (2 if cfg.norm.name == "layernorm" else 1) * cfg.model.d_model


def decoder_params(cfg: ArchConfig) -> int:
    """Every parameter of the ``Decoder`` (positions, blocks, final norm): the test checks it against torch."""
    matrices, vectors = layer_weights(cfg)
    table = cfg.model.max_seq_len * cfg.model.d_model if cfg.pos.name == "learned" else 0
    return cfg.model.n_layers * (matrices + vectors) + norm_params(cfg) + table


def decoder_work(cfg: ArchConfig, batch: int, seq: int, context: int | None = None, elem: int = 4,
                 lm_head: bool = False) -> Work:
    """One forward of ``seq`` new tokens per sequence attending to ``context`` keys (default ``seq``).

    ``elem`` is bytes per element of weights, activations and cache alike.
    """
    m = cfg.model
    d, hd, h, kv, ff, L = m.d_model, cfg.head_dim, m.n_heads, cfg.n_kv_heads, cfg.ffn_hidden, m.n_layers
    keys = seq if context is None else context
    n = batch * seq
    swiglu = cfg.ffn.name == "swiglu"
    matrices, vectors = layer_weights(cfg)
    weights = L * (matrices + vectors) + norm_params(cfg) + (seq * d if cfg.pos.name == "learned" else 0)
    # Inputs once per matrix, outputs once; K/V outputs are the cache writes, counted there.
    ffn_in = (2 if swiglu else 1) * n * d
    ffn_act = ffn_in + (2 if swiglu else 1) * n * ff + n * ff + n * d
    attn_proj_act = 3 * n * d + n * h * hd + n * h * hd + n * d  # q/k/v read x, q out; out reads y, writes
    linear_act = L * (attn_proj_act + ffn_act)
    attention_act = L * 2 * n * h * hd  # reads Q, writes its output
    norms = (2 * L + 1) * 2 * n * d
    kv_read = L * 2 * batch * kv * keys * hd
    kv_write = L * 2 * n * kv * hd
    linear_flops = 2 * n * L * matrices
    attention_flops = L * 2 * 2 * batch * h * seq * keys * hd
    if lm_head:
        weights += m.vocab_size * d + (0 if m.tie_embeddings else n * d)  # head, plus the embedding rows looked up
        linear_act += n * d + n * m.vocab_size
        linear_flops += 2 * n * d * m.vocab_size
    return Work(linear_flops=linear_flops, attention_flops=attention_flops, weight_bytes=weights * elem,
                linear_activation_bytes=linear_act * elem, attention_activation_bytes=attention_act * elem,
                norm_bytes=norms * elem, kv_read_bytes=kv_read * elem, kv_write_bytes=kv_write * elem, tokens=n)


def mode_work(cfg: ArchConfig, mode: str, batch: int, seq: int, elem: int = 4, lm_head: bool = False) -> Work:
    """A timed mode at a shape: ``seq`` is the sequence length (forward, train, prefill) or the context
    already cached before a decode step (which then attends to seq + 1 keys, its own token included)."""
    if mode in ("forward", "prefill"):
        return decoder_work(cfg, batch, seq, elem=elem, lm_head=lm_head)
    if mode == "train":
        return decoder_work(cfg, batch, seq, elem=elem, lm_head=lm_head).times(3)
    if mode == "decode":
        return decoder_work(cfg, batch, 1, seq + 1, elem=elem, lm_head=lm_head)
    raise ValueError(f"mode={mode!r} is not one of {', '.join(MODES)}")


def lm_params(cfg: ArchConfig) -> int:
    """The whole language model: decoder, token embedding and (when untied) the head."""
    embed = cfg.model.vocab_size * cfg.model.d_model
    return decoder_params(cfg) + embed * (1 if cfg.model.tie_embeddings else 2)


def kv_cache_bytes(cfg: ArchConfig, batch: int, context: int, elem: int) -> int:
    """K and V of ``context`` tokens per sequence over every layer."""
    return 2 * cfg.model.n_layers * batch * cfg.n_kv_heads * context * cfg.head_dim * elem


def largest_batch(cfg: ArchConfig, context: int, elem: int, memory_bytes: float) -> int:
    """Sequences whose KV cache at ``context`` fits in memory beside the weights (activations not counted)."""
    free = memory_bytes - lm_params(cfg) * elem
    return max(0, int(free // kv_cache_bytes(cfg, 1, context, elem)))
