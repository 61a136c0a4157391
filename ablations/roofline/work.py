"""FLOPs and bytes moved by one call of the timed unit, from the work each component states for itself.

``components.work`` has the conventions and ``Decoder.work`` adds up what every component states (elements);
this module turns that into bytes in the run's dtype, adds the language model's head where asked, and states a
training step as three forwards (backward reads the weights again and writes their gradients; it reads and writes
about twice the activations). FLOPs are the design's (``flops``, what the roofline prices) and the executed
(``executed_flops``: a sliding window's dense masked kernel scores every key it holds, also those it masks).

N = batch x T new tokens. The language model's head (d x vocab) and embedding lookup (N rows) are added
only when asked (``lm_head``): the harness times the decoder alone.

Memory (``kv_cache_bytes``, ``largest_batch``) is the cache the attention itself allocates, read off a meta-device
cache from ``components.new_cache``: what a token costs is the attention's business (K and V of its KV heads, MLA's
latent, a sliding window's rolling buffer of at most W positions), never a formula repeated here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import torch

from blockbench import Step, linear
from blockbench import Work as Elements
from components import ArchConfig, Decoder, build_decoder, build_lm, count_parameters, new_cache

MODES = ("forward", "train", "prefill", "decode")
# Bytes per element of each precision the predictor prices.
ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _counted(name: str) -> property:
    """One of the components' counts as it is: a FLOP count."""
    return property(lambda self: getattr(self.elements, name))


def _priced(name: str) -> property:
    """One of the components' counts of elements, in bytes at ``elem`` each."""
    return property(lambda self: getattr(self.elements, name) * self.elem)


@dataclass(frozen=True)
class Work:
    """One call's work as the components state it (``components.work.Work``: FLOPs, and elements moved by the part of
    the model that moves them) priced at ``elem`` bytes per element, with ``tokens``: N, the rows of every matrix
    product, which decides how efficient it can be."""

    elements: Elements
    tokens: int
    elem: int = 4

    linear_flops = _counted("linear_flops")
    attention_flops = _counted("attention_flops")
    masked_flops = _counted("masked_flops")
    # The design's FLOPs: what the roofline prices (what the design choice asks of the machine).
    flops = _counted("flops")
    # What the kernels compute (a dense masked kernel: every key it holds), where utilisation is read.
    executed_flops = _counted("executed_flops")
    weight_bytes = _priced("weights")
    linear_activation_bytes = _priced("linear_activations")
    attention_activation_bytes = _priced("attention_activations")
    norm_bytes = _priced("norm_activations")
    kv_read_bytes = _priced("kv_read")
    kv_write_bytes = _priced("kv_write")

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
        """``k`` calls' work over the same N rows (a training step: three forwards' worth)."""
        return replace(self, elements=self.elements * k)


@functools.cache
def decoder_params(arch: ArchConfig) -> int:
    """Every parameter of the ``Decoder`` (positions, blocks, final norm), counted on the built module (meta)."""
    return count_parameters(build_decoder(arch, device="meta"))


def decoder_work(arch: ArchConfig, batch: int, seq: int, context: int | None = None, elem: int = 4,
                 lm_head: bool = False) -> Work:
    """One forward of ``seq`` new tokens per sequence attending to ``context`` keys (default ``seq``).

    ``elem`` is bytes per element of weights, activations and cache alike.
    """
    m = arch.model
    n = batch * seq
    w = Decoder.work(arch, Step(batch, seq, seq if context is None else context))
    if lm_head:
        # The head's product, and the embedding's N rows looked up (a tied head has read its whole table already).
        rows = Elements(weights=0 if m.tie_embeddings else n * m.d_model)
        w = w + linear(m.d_model, m.vocab_size, n, bias=False) + rows
    return Work(w, tokens=n, elem=elem)


def mode_work(arch: ArchConfig, mode: str, batch: int, seq: int, elem: int = 4, lm_head: bool = False) -> Work:
    """A timed mode at a shape: ``seq`` is the sequence length (forward, train, prefill) or the context
    already cached before a decode step (which then attends to seq + 1 keys, its own token included)."""
    if mode in ("forward", "prefill"):
        return decoder_work(arch, batch, seq, elem=elem, lm_head=lm_head)
    if mode == "train":
        return decoder_work(arch, batch, seq, elem=elem, lm_head=lm_head).times(3)
    if mode == "decode":
        return decoder_work(arch, batch, 1, seq + 1, elem=elem, lm_head=lm_head)
    raise ValueError(f"mode={mode!r} is not one of {', '.join(MODES)}")


@functools.cache
def lm_params(arch: ArchConfig) -> int:
    """The whole language model (decoder, token embedding, the head when untied), counted on the built module."""
    return count_parameters(build_lm(arch, device="meta"))


def kv_cache_bytes(arch: ArchConfig, batch: int, context: int, elem: int) -> int:
    """Bytes the attention's own cache holds for ``batch`` sequences of ``context`` tokens, over every layer.

    Built on the meta device (no memory), so each attention answers for itself: MHA/GQA/MQA hold K and V of their
    KV heads per token, MLA its latent and RoPE key (``kv_lora_rank + qk_rope_head_dim`` values per token and layer),
    a sliding window at most its W positions however long the context. Counted in elements (float32, 4 bytes, on
    meta) and priced at ``elem`` bytes each, so any dtype's size can be asked for.
    """
    if context <= 0:  # nothing cached (a training step); a cache of 0 positions would mean the model's default
        return 0
    cache = new_cache(arch, batch, context, dtype=torch.float32, device="meta")
    return cache.nbytes // 4 * elem


def kv_bytes_per_token(arch: ArchConfig, elem: int) -> int:
    """Bytes one more token adds to one sequence's cache while it has room (a window's buffer stops growing at W)."""
    return kv_cache_bytes(arch, 1, 1, elem)


def largest_batch(arch: ArchConfig, context: int, elem: int, memory_bytes: float) -> int:
    """Sequences whose KV cache at ``context`` fits in memory beside the weights (activations not counted), the
    cache as the attention holds it (``kv_cache_bytes``: a window's at most W positions, MLA's latent)."""
    if context < 1:
        raise ValueError(f"largest_batch needs a context of at least one token, not {context}")
    free = memory_bytes - lm_params(arch) * elem
    return max(0, int(free // kv_cache_bytes(arch, 1, context, elem)))
