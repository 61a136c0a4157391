"""The decoder stack and a small language model around it.

GPT-2 and Llama-2 are two ``ArchConfig`` values for these same classes, not two classes.
"""

from __future__ import annotations

import hashlib
import math

import torch
from torch import nn

from components.attention import KVCache, new_cache
from components.block import Block, through
from components.config import ArchConfig
from components.declarations import hook_modules
from components.norms import NORMS, build_norm
from components.positions import POSITIONS, build_positions
from components.work import Step, Work


class Decoder(nn.Module):
    """Positions, ``n_layers`` blocks and the final norm, on hidden states of shape (batch, seq, d_model).

    This is what the harness times as "the block": everything a design choice touches, without the
    vocabulary-sized embedding and head that would otherwise dominate at small d.
    """

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        arch.validate()
        self.arch = arch
        self.positions = build_positions(arch)
        self.blocks = nn.ModuleList(Block(arch, layer=i) for i in range(arch.model.n_layers))
        self.norm = build_norm(arch.norm.name, arch.model.d_model, arch.norm.eps)
        init_weights(self, arch)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        """One call's work: positions, every block, the final norm (each states its own)."""
        positions = POSITIONS.get(arch.pos.name).work(arch, step)
        final = NORMS.get(arch.norm.name).work(arch, step)
        return positions + arch.model.n_layers * Block.work(arch, step) + final

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        offset = cache.pos if cache is not None else 0
        x = self.positions.embed(x, offset)
        rotation = self.positions.rotation(x.shape[1], offset, x.device)
        score_bias = self.positions.score_bias()
        for block in self.blocks:
            x = block(x, rotation, cache, score_bias)
        if cache is not None:
            cache.pos += x.shape[1]
        return self.norm(x)

    def new_cache(self, batch_size: int, max_seq_len: int | None = None) -> KVCache:
        p = next(self.parameters())
        return new_cache(self.arch, batch_size, max_seq_len, dtype=p.dtype, device=p.device)


class LanguageModel(nn.Module):
    """Token embedding, the decoder, and an output head (tied to the embedding when configured)."""

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        arch.validate()  # before nn.Embedding, whose own error would not name the key
        self.arch = arch
        self.embed = nn.Embedding(arch.model.vocab_size, arch.model.d_model)
        self.decoder = Decoder(arch)
        self.head = nn.Linear(arch.model.d_model, arch.model.vocab_size, bias=False)
        init_weights(self.embed, arch)
        if arch.model.tie_embeddings:
            self.head.weight = self.embed.weight
        else:
            init_weights(self.head, arch)
        # Last, so every module before keeps its init draws; only when an ``embedding`` or ``logits`` choice builds
        # one, so a model without keeps its modules.
        embedding, logits = hook_modules(arch, "embedding"), hook_modules(arch, "logits")
        self.hooked = bool(embedding or logits)
        if self.hooked:
            self.embed_out, self.logits_out = nn.ModuleList(embedding), nn.ModuleList(logits)

    def forward(self, tokens: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        if not self.hooked:
            return self.head(self.decoder(self.embed(tokens), cache))
        # The embeddings through the ``embedding`` modules, the logits through the ``logits`` modules.
        x = through(self.embed_out, self.embed(tokens))
        return through(self.logits_out, self.head(self.decoder(x, cache)))

    def new_cache(self, batch_size: int, max_seq_len: int | None = None) -> KVCache:
        return self.decoder.new_cache(batch_size, max_seq_len)


def init_weights(module: nn.Module, arch: ArchConfig, seed: int | None = None) -> None:
    """GPT-2's init for every variant alike, so no variant wins by its initialisation.

    N(0, init_std) for linear and embedding weights, zero biases, ones for norm weights, and residual
    output projections (attention out, FFN down) scaled by 1/sqrt(2 n_layers).

    Each ``init`` choice (``components.choice``) then adjusts every parameter drawn here in place, given its name
    relative to ``module``: match names by their ending (``attn.v.weight``), which is the same in a ``Decoder`` and in
    the ``LanguageModel`` around it.

    With ``seed``, each parameter is drawn from its own generator, seeded by ``seed`` and the parameter's name
    (``common_random_init``): two models that differ in one module then start every module they share with
    identical weights, where one global stream would shift every draw after the first module that differs.
    """
    std = arch.model.init_std
    residual_std = std / math.sqrt(2 * arch.model.n_layers)
    adjust = hook_modules(arch, "init")  # each ``init`` choice's adjustment, applied to every parameter drawn here
    for name, p in module.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        if p.is_meta:  # a model built to be counted has no values to set, and drawing them would only cost time
            continue
        if p.ndim >= 2:
            is_residual = name.endswith(("attn.out.weight", "ffn.down.weight"))
            generator = None if seed is None else torch.Generator(p.device).manual_seed(parameter_seed(seed, name))
            nn.init.normal_(p, mean=0.0, std=residual_std if is_residual else std, generator=generator)
        elif leaf == "bias":
            nn.init.zeros_(p)
        else:
            nn.init.ones_(p)
        if adjust:
            with torch.no_grad():
                for adjustment in adjust:
                    adjustment(name, p)


def parameter_seed(seed: int, name: str) -> int:
    """A generator seed from a run's seed and a parameter's name: stable across processes and Python versions
    (``hash`` of a string is salted per process), distinct for every (seed, name) in practice."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest(), "little") >> 1


def common_random_init(model: nn.Module, seed: int) -> None:
    """Re-draw ``model``'s weights with common random numbers: each by name from ``seed`` (``init_weights``).

    For paired comparisons (the quality runs): the arms of a seed share the embedding, the head, every attention
    projection and norm a flip does not touch, so their difference measures the flip, not the draw of the rest.
    """
    init_weights(model, model.arch, seed=seed)


def count_parameters(module: nn.Module) -> int:
    """Distinct parameters (a tied head counts once); works on the meta device."""
    return sum(p.numel() for p in module.parameters())
