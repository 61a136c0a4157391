"""FLOPs and bytes moved by one call of the timed unit, from the work each component states for itself.

``components.work`` has the conventions and ``Decoder.work`` adds up what every component states (elements);
this module turns that into bytes in the run's dtype, adds the language model's head where asked, and states a
training step as three forwards (backward reads the weights again and writes their gradients; it reads and writes
about twice the activations).

N = batch x T new tokens. The language model's head (d x vocab) and embedding lookup (N rows) are added
only when asked (``lm_head``): the harness times the decoder alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

from components import ArchConfig, Decoder, build_decoder, build_lm, count_parameters
from components.work import Step

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


@functools.cache
def decoder_params(cfg: ArchConfig) -> int:
    """Every parameter of the ``Decoder`` (positions, blocks, final norm), counted on the built module (meta)."""
    return count_parameters(build_decoder(cfg, device="meta"))


def decoder_work(cfg: ArchConfig, batch: int, seq: int, context: int | None = None, elem: int = 4,
                 lm_head: bool = False) -> Work:
    """One forward of ``seq`` new tokens per sequence attending to ``context`` keys (default ``seq``).

    ``elem`` is bytes per element of weights, activations and cache alike.
    """
    m = cfg.model
    n = batch * seq
    w = Decoder.work(cfg, Step(batch, seq, seq if context is None else context))
    weights, linear_act, linear_flops = w.weights, w.linear_activations, w.linear_flops
    if lm_head:
        weights += m.vocab_size * m.d_model + (0 if m.tie_embeddings else n * m.d_model)  # head, embedding rows
        linear_act += n * m.d_model + n * m.vocab_size
        linear_flops += 2 * n * m.d_model * m.vocab_size
    return Work(linear_flops=linear_flops, attention_flops=w.attention_flops, weight_bytes=weights * elem,
                linear_activation_bytes=linear_act * elem, attention_activation_bytes=w.attention_activations * elem,
                norm_bytes=w.norm_activations * elem, kv_read_bytes=w.kv_read * elem, kv_write_bytes=w.kv_write * elem,
                tokens=n)


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


@functools.cache
def lm_params(cfg: ArchConfig) -> int:
    """The whole language model (decoder, token embedding, the head when untied), counted on the built module."""
    return count_parameters(build_lm(cfg, device="meta"))


def kv_cache_bytes(cfg: ArchConfig, batch: int, context: int, elem: int) -> int:
    """K and V of ``context`` tokens per sequence over every layer."""
    return 2 * cfg.model.n_layers * batch * cfg.n_kv_heads * context * cfg.head_dim * elem


def largest_batch(cfg: ArchConfig, context: int, elem: int, memory_bytes: float) -> int:
    """Sequences whose KV cache at ``context`` fits in memory beside the weights (activations not counted)."""
    free = memory_bytes - lm_params(cfg) * elem
    return max(0, int(free // kv_cache_bytes(cfg, 1, context, elem)))
