"""The work one call moves, stated by each component for itself: FLOPs and elements read and written.

Every module class that the block is built from has a classmethod ``work(arch, step) -> Work``, and the block and
the decoder add up their parts' (``Decoder.work``), so a new component states its own cost beside its code and
every consumer (``ablations.roofline.work``, the measured FLOP rows, the predictor and the sizes table) counts it.
Counts are in elements; ``ablations.roofline.work`` multiplies them by the dtype's size.

Conventions (as ``torch.utils.flop_counter``): a multiply-add is 2 FLOPs; only matrix products count; attention
counts the full T x S score matrix (QK^T and PV), in one formula (``attention_core``). FLOPs come in two counts
where they differ: the **design's** (``flops``: the keys each query attends to, a sliding window's min(keys, W))
and the **executed** (``executed_flops``: what the kernel computes, a dense masked kernel every key it holds, also
those its mask hides; the excess is ``masked_flops``). Bytes:

- **weights**: every parameter read once per call, except that a learned position table contributes only the T
  rows the call looks up (not its max_seq_len x d);
- **KV cache**: attention reads K and V of every key it attends to (S per sequence) and the K/V projections write
  the T new ones (into the cache, or as activations without one);
- **activations**: each linear layer reads its input and writes its output (an input read by several matrices,
  q/k/v or SwiGLU's gate/up, is read once per matrix); each norm reads and writes its input; attention reads Q and
  writes its output; the T x S scores stay on chip (fused kernels); elementwise ops (residual adds, GELU/SiLU,
  RoPE, ALiBi's bias, the position add) are not counted: a fusing compiler removes them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Step:
    """One call: ``seq`` new tokens per sequence for ``batch`` sequences, each attending to ``keys`` keys."""

    batch: int
    seq: int
    keys: int

    @property
    def tokens(self) -> int:
        return self.batch * self.seq


@dataclass(frozen=True)
class Work:
    """One call's FLOPs and elements moved, by the part of the model that moves them.

    Parts add field by field and repeat by a count: the decoder's is ``positions + n_layers * block + final``."""

    linear_flops: int = 0
    attention_flops: int = 0
    weights: int = 0
    linear_activations: int = 0
    attention_activations: int = 0
    norm_activations: int = 0
    kv_read: int = 0
    kv_write: int = 0
    # Attention FLOPs the kernel computes beyond the design's: scores of keys its mask hides (a window's).
    masked_flops: int = 0

    def __add__(self, other: Work) -> Work:
        return Work(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __mul__(self, k: int) -> Work:
        return Work(**{f.name: getattr(self, f.name) * k for f in fields(self)})

    __rmul__ = __mul__

    @property
    def flops(self) -> int:
        """The design's: every matrix product the architecture asks for."""
        return self.linear_flops + self.attention_flops

    @property
    def executed_flops(self) -> int:
        """What the kernels compute: the design's, plus the scores a dense masked kernel computes and masks."""
        return self.flops + self.masked_flops


def linear(n_in: int, n_out: int, tokens: int, bias: bool, write_output: bool = True) -> Work:
    """One ``nn.Linear`` over ``tokens`` rows: its weights (and bias), 2 FLOPs per multiply-add, its input read and
    its output written (unless the caller counts the output elsewhere, as K/V's go to the cache)."""
    return Work(linear_flops=2 * tokens * n_in * n_out, weights=n_in * n_out + (n_out if bias else 0),
                linear_activations=tokens * n_in + (tokens * n_out if write_output else 0))


def attention_core(batch: int, heads: int, queries: int, keys: int, qk_dim: int, v_dim: int,
                   executed_keys: int | None = None) -> Work:
    """Attention's two products for ``queries`` queries per sequence and head, each against ``keys`` keys: the
    scores (Q K^T over ``qk_dim``) and the weighted sum of V (over ``v_dim``). ``executed_keys``: the keys per
    query the kernel computes where that is more (a dense masked kernel's every key held); the excess is
    ``masked_flops``."""
    per_key = 2 * batch * heads * queries * (qk_dim + v_dim)
    return Work(attention_flops=per_key * keys, masked_flops=per_key * ((executed_keys or keys) - keys))


def norm(width: int, rows: int, params: int) -> Work:
    """A normalisation over ``rows`` vectors of ``width``: reads and writes them once, reads its ``params``."""
    return Work(weights=params, norm_activations=2 * rows * width)
