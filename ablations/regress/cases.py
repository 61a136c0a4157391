"""What the regression check times: each component variant, and the timed block under each sweep's variants.

A case is built from one tree's ``components`` module, so the base and the head each run their own code
on the same shapes, seed and inputs. Sizes are those of the pytest-benchmark suite (``tests/benchmarks``):
a d=512 block at 256 tokens, where one thread spends its time in the math and one call takes milliseconds.

Every case also says how to renew its state: its parameters, inputs and KV cache are moved to freshly
allocated memory before each round, in that round's order, because where memory-bound state lands moved a
ratio of identical code by several percent in one process (DESIGN.md, the decode placement finding).
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import torch
from torch import nn

D_MODEL, N_HEADS, MAX_SEQ_LEN = 512, 8, 2304
BLOCK_SHAPE = FFN_SHAPE = (1, 256)
ATTN_SHAPE = (1, 512)  # longer than the block's, so the SDPA core is a visible share of attention
POS_SHAPE = (1, 1024)
NORM_SHAPE = (512, 1024)  # (rows, width): the unfused RMSNorm's intermediates stay inside the L3 here
DECODE_SHAPE = (4, 2048)  # (batch, context) of one decode step with a KV cache
MODES = ("forward", "train", "decode")

# The block's variants: every value each sweep (conf/sweep/*.yaml) takes, as overrides of the GPT-2 block.
BLOCK_VARIANTS: dict[str, dict[str, object]] = {
    "gpt2": {},
    "rmsnorm": {"norm": "rmsnorm"},
    "rope": {"pos": "rope"},
    "nope": {"pos": "none"},
    "swiglu": {"ffn": "swiglu"},
    "gqa4": {"attn": "gqa", "kv": 4},
    "gqa2": {"attn": "gqa", "kv": 2},
    "mqa": {"attn": "mqa"},
    "nobias": {"bias": False},
    "llama2": {"pos": "rope", "norm": "rmsnorm", "ffn": "swiglu", "attn": "gqa", "kv": 2, "bias": False},
}
ATTN_VARIANTS: dict[str, dict[str, object]] = {"mha": {}, "gqa2": {"attn": "gqa", "kv": 2}, "mqa": {"attn": "mqa"}}
# A few cases that cover an op of each kind and the block in every mode: what CI runs on every commit.
CI_CASES = ("norm/rmsnorm/forward", "norm/layernorm/train", "attn/gqa2/decode", "block/gpt2/forward",
            "block/llama2/train", "block/llama2/decode")
CASE_SETS = ("default", "ci")


@dataclass
class Subject:
    """One side's built case: the call to time, and the tensors whose memory is renewed every round."""

    call: Callable[[], object]
    state: list[torch.Tensor]

    def renew(self) -> None:
        # ``.data`` swaps the storage and keeps the tensor objects, so the call's closures see the new memory.
        with torch.no_grad():
            for t in self.state:
                t.data = t.data.clone()


@dataclass(frozen=True)
class Case:
    component: str  # norm, ffn, pos, attn, block
    variant: str
    mode: str  # forward, train, decode
    build: Callable[[ModuleType], Subject]
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.component}/{self.variant}/{self.mode}"

    @property
    def counted(self) -> bool:
        """Also counted in instructions under callgrind: the norms' and positions' forward and attention's decode
        step, the calls of a few MFLOP. Matrix products run at ~20 MFLOP/s under valgrind here (one FFN forward
        at d=512 took a minute), so cases made of them are timed only."""
        return (self.component in ("norm", "pos") and self.mode == "forward") or (
            self.component == "attn" and self.mode == "decode")


def arch(c: ModuleType, pos: str = "learned", norm: str = "layernorm", ffn: str = "gelu", attn: str = "mha",
         kv: int | None = None, bias: bool = True) -> object:
    """One block with the given choices (GPT-2's by default), from tree ``c``'s own config classes."""
    sizes = dict(d_model=D_MODEL, n_layers=1, n_heads=N_HEADS, max_seq_len=MAX_SEQ_LEN)
    choices = dict(pos=c.PosConfig(pos), norm=c.NormConfig(norm), ffn=c.FFNConfig(ffn), attn=c.AttnConfig(attn, kv))
    if hasattr(c, "BiasConfig"):
        return c.ArchConfig(model=c.ModelConfig(**sizes), **choices, bias=c.BiasConfig("on" if bias else "off"))
    # A tree from before bias was a choice group (it was ModelConfig.bias), so a base that old still compares.
    return c.ArchConfig(model=c.ModelConfig(**sizes, bias=bias), **choices)


def _as_tuple(out: object) -> tuple[torch.Tensor, ...]:
    return out if isinstance(out, tuple) else (out,)


def timed_call(mode: str, fn: Callable[..., object], inputs: Sequence[torch.Tensor],
               params: Sequence[nn.Parameter]) -> Subject:
    """Inference forward, or forward+backward for a fixed upstream gradient (no loss op added to the cost)."""
    if mode != "train":
        def forward() -> object:
            with torch.inference_mode():
                return fn(*inputs)
        return Subject(forward, [*inputs, *params])
    leaves = [x.detach().requires_grad_(True) for x in inputs]
    wrt = [*leaves, *params]
    with torch.no_grad():
        upstream = [torch.randn_like(out) for out in _as_tuple(fn(*leaves))]

    def train() -> object:
        for t in wrt:
            t.grad = None
        return torch.autograd.backward(_as_tuple(fn(*leaves)), upstream, inputs=wrt)

    return Subject(train, [*wrt, *upstream])


def _norm(name: str, mode: str) -> Callable[[ModuleType], Subject]:
    def build(c: ModuleType) -> Subject:
        rows, width = NORM_SHAPE
        norm = c.NORMS.get(name)(width, eps=1e-5)
        return timed_call(mode, norm, [torch.randn(rows, width)], list(norm.parameters()))
    return build


def _ffn(name: str, mode: str) -> Callable[[ModuleType], Subject]:
    def build(c: ModuleType) -> Subject:
        ffn = c.FFNS.get(name)(arch(c, ffn=name))
        return timed_call(mode, ffn, [torch.randn(*FFN_SHAPE, D_MODEL)], list(ffn.parameters()))
    return build


def _pos(name: str, mode: str) -> Callable[[ModuleType], Subject]:
    """What each variant adds: the learned table added at the input, or Q and K rotated."""
    def build(c: ModuleType) -> Subject:
        b, t = POS_SHAPE
        if name == "learned":
            pos = c.LearnedPositions(arch(c))
            return timed_call(mode, pos.embed, [torch.randn(b, t, D_MODEL)], list(pos.parameters()))
        pos = c.RotaryPositions(arch(c, pos="rope"))
        apply = c.positions.apply_rotation

        def rotate(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            rot = pos.rotation(t)
            return apply(q, rot), apply(k, rot)

        head = (b, N_HEADS, t, D_MODEL // N_HEADS)
        return timed_call(mode, rotate, [torch.randn(head), torch.randn(head)], list(pos.parameters()))
    return build


def _decode(step: Callable[[torch.Tensor, object], object], cache: object, context: int, batch: int,
            params: Sequence[torch.Tensor]) -> Subject:
    # Decode cost does not depend on the cached values: random K/V spare a prefill of `context` tokens.
    cache.k.normal_()
    cache.v.normal_()
    token = torch.randn(batch, 1, D_MODEL)

    def call() -> object:
        cache.pos = context  # rewind: every call decodes the token at position `context`
        with torch.inference_mode():
            return step(token, cache)

    return Subject(call, [token, cache.k, cache.v, *params])


def _attn(overrides: dict[str, object], mode: str) -> Callable[[ModuleType], Subject]:
    def build(c: ModuleType) -> Subject:
        cfg = arch(c, **overrides)
        attn = c.CausalSelfAttention(cfg)
        if mode == "decode":
            b, context = DECODE_SHAPE
            cache = c.KVCache(1, b, cfg.n_kv_heads, context + 1, cfg.head_dim)
            return _decode(lambda x, kv: attn(x, None, kv), cache, context, b, list(attn.parameters()))
        return timed_call(mode, attn, [torch.randn(*ATTN_SHAPE, D_MODEL)], list(attn.parameters()))
    return build


def _block(overrides: dict[str, object], mode: str) -> Callable[[ModuleType], Subject]:
    def build(c: ModuleType) -> Subject:
        model = c.build_decoder(arch(c, **overrides))
        state = [*model.parameters(), *model.buffers()]
        if mode == "decode":
            b, context = DECODE_SHAPE
            return _decode(model, model.new_cache(b, context + 1), context, b, state)
        subject = timed_call(mode, model, [torch.randn(*BLOCK_SHAPE, D_MODEL)], list(model.parameters()))
        subject.state += list(model.buffers())
        return subject
    return build


def all_cases() -> list[Case]:
    """The default case set, in a stable order: components first, then the block."""
    cases = []
    for name, mode in itertools.product(("layernorm", "rmsnorm"), MODES[:2]):
        cases.append(Case("norm", name, mode, _norm(name, mode), NORM_SHAPE))
    for name, mode in itertools.product(("gelu", "swiglu"), MODES[:2]):
        cases.append(Case("ffn", name, mode, _ffn(name, mode), (*FFN_SHAPE, D_MODEL)))
    for name, mode in itertools.product(("learned", "rope"), MODES[:2]):
        cases.append(Case("pos", name, mode, _pos(name, mode), (*POS_SHAPE, D_MODEL)))
    for (name, overrides), mode in itertools.product(ATTN_VARIANTS.items(), MODES):
        shape = (*DECODE_SHAPE, D_MODEL) if mode == "decode" else (*ATTN_SHAPE, D_MODEL)
        cases.append(Case("attn", name, mode, _attn(overrides, mode), shape))
    for (name, overrides), mode in itertools.product(BLOCK_VARIANTS.items(), MODES):
        shape = (*DECODE_SHAPE, D_MODEL) if mode == "decode" else (*BLOCK_SHAPE, D_MODEL)
        cases.append(Case("block", name, mode, _block(overrides, mode), shape))
    return cases


def select(case_set: str = "default", patterns: Sequence[str] = ()) -> list[Case]:
    """The cases of ``case_set`` whose name matches any pattern (a glob, or a substring without wildcards)."""
    cases = all_cases()
    if case_set == "ci":
        cases = [c for c in cases if c.name in CI_CASES]

    def matches(name: str, pattern: str) -> bool:
        return fnmatch.fnmatch(name, pattern) if any(ch in pattern for ch in "*?[") else pattern in name

    if patterns:
        cases = [c for c in cases if any(matches(c.name, p) for p in patterns)]
    return cases


def by_name(names: Sequence[str]) -> list[Case]:
    index = {c.name: c for c in all_cases()}
    return [index[n] for n in names]
