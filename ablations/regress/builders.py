"""How each kind of case is built from one tree's ``components`` module, so the base and the head each run their own
code on the same shapes, seed and inputs: a norm, an FFN, a position scheme, attention, the block."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import torch

from ablations.measure.shapes import (
    ATTN_SHAPE,
    BLOCK_SHAPE,
    D_MODEL,
    DECODE_SHAPE,
    FFN_SHAPE,
    N_HEADS,
    NORM_SHAPE,
    POS_SHAPE,
)
from ablations.regress.architecture import arch
from ablations.regress.subjects import Subject, decode_step, timed_call
from ablations.regress.tree_compat import one_layer_cache
from blockbench import choice
from components import POSITIONS, ArchConfig, ModelConfig


def norm_case(name: str, mode: str) -> Callable[[ModuleType], Subject]:
    """Norm ``name`` alone over ``NORM_SHAPE``'s rows."""
    def build(components: ModuleType) -> Subject:
        rows, width = NORM_SHAPE
        norm = components.NORMS.get(name)(width, eps=1e-5)
        return timed_call(mode, norm, [torch.randn(rows, width)], list(norm.parameters()))
    return build


def ffn_case(name: str, mode: str) -> Callable[[ModuleType], Subject]:
    """FFN ``name`` alone at the block's tokens."""
    def build(components: ModuleType) -> Subject:
        ffn = components.FFNS.get(name)(arch(components, ffn=name))
        return timed_call(mode, ffn, [torch.randn(*FFN_SHAPE, D_MODEL)], list(ffn.parameters()))
    return build


def pos_case(name: str, mode: str) -> Callable[[ModuleType], Subject]:
    """What each position scheme adds: a table added at the input (it has parameters), or Q and K rotated, or a
    bias on the scores of a (heads, T, T) attention."""
    def build(components: ModuleType) -> Subject:
        b, t = POS_SHAPE
        pos = components.POSITIONS.get(name)(arch(components, pos=name))
        params = list(pos.parameters())
        if params:
            return timed_call(mode, pos.embed, [torch.randn(b, t, D_MODEL)], params)
        head = (b, N_HEADS, t, D_MODEL // N_HEADS)
        if pos.rotation(t) is not None:
            apply = components.positions.apply_rotation

            def rotate(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                rot = pos.rotation(t)
                return apply(q, rot), apply(k, rot)

            return timed_call(mode, rotate, [torch.randn(head), torch.randn(head)], params)
        bias = pos.score_bias()

        def biased(scores: torch.Tensor) -> torch.Tensor:
            return scores + bias(0, t, t, scores.device)

        return timed_call(mode, biased, [torch.randn(b, N_HEADS, t, t)], params)
    return build


def pos_timed(name: str) -> bool:
    """Whether a position scheme adds anything to time (NoPE adds nothing)."""
    model = ModelConfig(d_model=D_MODEL, n_heads=N_HEADS, max_seq_len=8)
    probe = POSITIONS.get(name)(ArchConfig(model=model, pos=choice("pos").at(name)))
    return bool(list(probe.parameters())) or probe.rotation(1) is not None or probe.score_bias() is not None


def attn_case(overrides: dict[str, object], mode: str) -> Callable[[ModuleType], Subject]:
    """Attention alone at ``overrides``: over ``ATTN_SHAPE``, or one decode step with its own one-layer cache."""
    def build(components: ModuleType) -> Subject:
        case_arch = arch(components, **overrides)
        attn = components.ATTENTIONS.get(case_arch.attn.name)(case_arch)
        if mode == "decode":
            b, context = DECODE_SHAPE
            cache = one_layer_cache(components, case_arch, b, context + 1)
            return decode_step(lambda x, kv: attn(x, None, kv), cache, context, b, list(attn.parameters()))
        return timed_call(mode, attn, [torch.randn(*ATTN_SHAPE, D_MODEL)], list(attn.parameters()))
    return build


def block_case(overrides: dict[str, object], mode: str) -> Callable[[ModuleType], Subject]:
    """A one-layer decoder at ``overrides``: over ``BLOCK_SHAPE``, or one decode step with its KV cache."""
    def build(components: ModuleType) -> Subject:
        model = components.build_decoder(arch(components, **overrides))
        if mode == "decode":
            b, context = DECODE_SHAPE
            return decode_step(model, model.new_cache(b, context + 1), context, b, list(model.parameters()),
                               list(model.buffers()))
        subject = timed_call(mode, model, [torch.randn(*BLOCK_SHAPE, D_MODEL)], list(model.parameters()))
        subject.state += list(model.buffers())
        return subject
    return build
