"""What the regression check times: each component variant, and the timed block under each sweep's variants.

A case is built from one tree's ``components`` module, so the base and the head each run their own code
on the same shapes, seed and inputs. Sizes are those of the pytest-benchmark suite (``tests/benchmarks``):
a d=512 block at 256 tokens, where one thread spends its time in the math and one call takes milliseconds.

Every case also says how to renew its state: its parameters, inputs and KV cache are moved to freshly
allocated memory before each round, in that round's order, because where memory-bound state lands moved a
ratio of identical code by several percent in one process (MHA decode timed against itself with one placement
kept came out 0.94 in one run and 1.04 in another: ``ablations.measure.point._measure_decode``).
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

import torch
from torch import nn

from ablations.config.columns import name_in
from components import POSITIONS, ArchConfig, Choice, ModelConfig, choice, choices, llama2_values

D_MODEL, N_HEADS, MAX_SEQ_LEN = 512, 8, 2304
BLOCK_SHAPE = FFN_SHAPE = (1, 256)
ATTN_SHAPE = (1, 512)  # longer than the block's, so the SDPA core is a visible share of attention
POS_SHAPE = (1, 1024)
NORM_SHAPE = (512, 1024)  # (rows, width): the unfused RMSNorm's intermediates stay inside the L3 here
DECODE_SHAPE = (4, 2048)  # (batch, context) of one decode step with a KV cache
MODES = ("forward", "train", "decode")

# KV heads at which the block and attention are timed with GQA: the kv sweep's middle values at 8 heads.
GQA_KV_HEADS = (4, 2)


def _values(c: Choice) -> list[dict[str, object]]:
    """Each value of choice ``c`` other than GPT-2's, as overrides (GQA at each of ``GQA_KV_HEADS``), then each of
    its setting flips on GPT-2's value (``{"attn": "mha", "attn.window": 64}``)."""
    out: list[dict[str, object]] = []
    for value in c.values[1:]:
        # A value the declaration sizes by its KV heads (GQA): one case per KV-head count.
        if c.at_size(value, GQA_KV_HEADS[0]) != c.at(value):
            out += [{c.group: value, "kv": kv} for kv in GQA_KV_HEADS]
        else:
            out.append({c.group: value})
    for settings in c.setting_flips.values():
        out.append({c.group: c.gpt2, **{f"{c.group}.{k}": v for k, v in settings.items()}})
    return out


def split_overrides(overrides: Mapping[str, object]) -> tuple[dict[str, tuple[str, dict[str, object]]], int]:
    """Overrides as ``{group: (value, settings)}`` and the KV heads (0: none given): a dotted key is a setting of its
    group (``attn.window``), the way Hydra spells it; ``kv`` sizes GQA."""
    groups: dict[str, tuple[str, dict[str, object]]] = {}
    for key, value in overrides.items():
        if key != "kv" and "." not in key:
            groups[key] = (str(value), {})
    for key, value in overrides.items():
        group, dot, setting = key.partition(".")
        if dot:
            groups[group][1][setting] = value
    return groups, int(overrides.get("kv") or 0)


def _name(overrides: dict[str, object]) -> str:
    """The case's variant name, as a sweep point's label names it (``rmsnorm``, ``gqa2``, ``nobias``, ``mha-w64``)."""
    groups, kv = split_overrides(overrides)
    configs = {g: choice(g).at_size(v, kv, **s) for g, (v, s) in groups.items()}
    a = ArchConfig(model=ModelConfig(d_model=D_MODEL, n_layers=1, n_heads=N_HEADS), **configs)
    return "+".join(name_in(choice(g), a) for g in groups)


def block_variants() -> dict[str, dict[str, object]]:
    """The block's variants: GPT-2's, every other value of every declared choice alone (the values each sweep
    takes), and Llama-2's block (GQA at 2 KV heads); derived from the declarations, so a new choice is timed."""
    out: dict[str, dict[str, object]] = {"gpt2": {}}
    for c in choices():
        out.update({_name(o): o for o in _values(c)})
    out["llama2"] = {**llama2_values(), "kv": GQA_KV_HEADS[-1]}
    return out


def attn_variants() -> dict[str, dict[str, object]]:
    """Attention alone: MHA, GQA at the smallest ``GQA_KV_HEADS``, and every other attention value."""
    attn = choice("attn")
    out: dict[str, dict[str, object]] = {attn.gpt2: {}}
    for o in _values(attn):
        if o.get("kv") in (None, GQA_KV_HEADS[-1]):
            out[_name(o)] = o
    return out


# A few cases that cover an op of each kind and the block in every mode: what CI runs on every commit.
CI_CASES = ("norm/rmsnorm/forward", "norm/layernorm/train", "attn/gqa2/decode", "block/gpt2/forward",
            "block/llama2/train", "block/llama2/decode")
CASE_SETS = ("default", "ci")


@dataclass
class Subject:
    """One side's built case: the call to time, the tensors whose memory is renewed every round, and the size of
    the design it built (elements of its parameters and of its KV cache), which the regression check compares
    between the sides (``ablations.regress.comparable``)."""

    call: Callable[[], object]
    state: list[torch.Tensor]
    design: dict[str, int] = field(default_factory=dict)

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
    # The choices and settings the case sets (``{"attn": "mha", "attn.window": 64}``), as ``arch`` takes them.
    overrides: Mapping[str, object] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.component}/{self.variant}/{self.mode}"

    @property
    def counted(self) -> bool:
        """Also counted in instructions under callgrind: the norms' and positions' forward and attention's decode
        step, the calls of a few MFLOP. Matrix products run far too slowly under valgrind to count, so cases made of
        them are timed only."""
        return (self.component in ("norm", "pos") and self.mode == "forward") or (
            self.component == "attn" and self.mode == "decode")


# Config classes of a tree from before choices were declared (``components.choice``), so an old base compares.
LEGACY = {"pos": "PosConfig", "norm": "NormConfig", "ffn": "FFNConfig", "attn": "AttnConfig", "bias": "BiasConfig"}


def arch(c: ModuleType, kv: int | None = None, **values: object) -> object:
    """One block with the given choices at the given values (GPT-2's for the rest; a dotted key is a setting,
    ``attn.window``), from tree ``c``'s own classes. A tree that lacks a group or a setting raises, and the
    regression check then leaves the case ``not compared`` (as it does one whose declaration lacks the setting:
    ``ablations.regress.comparable``)."""
    sizes = dict(d_model=D_MODEL, n_layers=1, n_heads=N_HEADS, max_seq_len=MAX_SEQ_LEN)
    if callable(getattr(c, "choice", None)):
        split, _ = split_overrides(values)
        groups = {g: c.choice(g).at_size(v, kv or 0, **s) for g, (v, s) in split.items()}
        return c.ArchConfig(model=c.ModelConfig(**sizes), **groups)
    if any("." in key for key in values):
        raise ValueError("this tree has no setting flips")
    unknown = set(values) - set(LEGACY)
    if unknown:
        raise ValueError(f"this tree has no choice group {', '.join(sorted(unknown))}")
    groups = {g: getattr(c, LEGACY[g])(v, kv) if g == "attn" else getattr(c, LEGACY[g])(v)
              for g, v in values.items() if g != "bias"}
    bias = values.get("bias", "on") == "on"
    if hasattr(c, "BiasConfig"):
        return c.ArchConfig(model=c.ModelConfig(**sizes), **groups, bias=c.BiasConfig("on" if bias else "off"))
    # A tree from before bias was a choice group (it was ModelConfig.bias), so a base that old still compares.
    return c.ArchConfig(model=c.ModelConfig(**sizes, bias=bias), **groups)


def _elements(tensors: Sequence[torch.Tensor]) -> int:
    return sum(t.numel() for t in tensors)


def _as_tuple(out: object) -> tuple[torch.Tensor, ...]:
    return out if isinstance(out, tuple) else (out,)


def timed_call(mode: str, fn: Callable[..., object], inputs: Sequence[torch.Tensor],
               params: Sequence[nn.Parameter]) -> Subject:
    """Inference forward, or forward+backward for a fixed upstream gradient (no loss op added to the cost)."""
    design = {"parameters": _elements(params)}
    if mode != "train":
        def forward() -> object:
            with torch.inference_mode():
                return fn(*inputs)
        return Subject(forward, [*inputs, *params], design)
    leaves = [x.detach().requires_grad_(True) for x in inputs]
    wrt = [*leaves, *params]
    with torch.no_grad():
        upstream = [torch.randn_like(out) for out in _as_tuple(fn(*leaves))]

    def train() -> object:
        for t in wrt:
            t.grad = None
        return torch.autograd.backward(_as_tuple(fn(*leaves)), upstream, inputs=wrt)

    return Subject(train, [*wrt, *upstream], design)


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
    """What each position scheme adds: a table added at the input (it has parameters), or Q and K rotated, or a
    bias on the scores of a (heads, T, T) attention."""
    def build(c: ModuleType) -> Subject:
        b, t = POS_SHAPE
        pos = c.POSITIONS.get(name)(arch(c, pos=name))
        params = list(pos.parameters())
        if params:
            return timed_call(mode, pos.embed, [torch.randn(b, t, D_MODEL)], params)
        head = (b, N_HEADS, t, D_MODEL // N_HEADS)
        if pos.rotation(t) is not None:
            apply = c.positions.apply_rotation

            def rotate(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                rot = pos.rotation(t)
                return apply(q, rot), apply(k, rot)

            return timed_call(mode, rotate, [torch.randn(head), torch.randn(head)], params)
        bias = pos.score_bias()

        def biased(scores: torch.Tensor) -> torch.Tensor:
            return scores + bias(0, t, t, scores.device)

        return timed_call(mode, biased, [torch.randn(b, N_HEADS, t, t)], params)
    return build


def _pos_timed(name: str) -> bool:
    """Whether a position scheme adds anything to time (NoPE adds nothing)."""
    model = ModelConfig(d_model=D_MODEL, n_heads=N_HEADS, max_seq_len=8)
    probe = POSITIONS.get(name)(ArchConfig(model=model, pos=choice("pos").at(name)))
    return bool(list(probe.parameters())) or probe.rotation(1) is not None or probe.score_bias() is not None


def _decode(step: Callable[[torch.Tensor, object], object], cache: object, context: int, batch: int,
            params: Sequence[torch.Tensor], buffers: Sequence[torch.Tensor] = ()) -> Subject:
    # Decode cost does not depend on the cached values: random contents spare a prefill of `context` tokens.
    tensors = cache.tensors() if hasattr(cache, "tensors") else [cache.k, cache.v]
    for t in tensors:
        t.normal_()
    token = torch.randn(batch, 1, D_MODEL)

    def call() -> object:
        cache.pos = context  # rewind: every call decodes the token at position `context`
        with torch.inference_mode():
            return step(token, cache)

    return Subject(call, [token, *tensors, *params, *buffers],
                   {"parameters": _elements(params), "KV cache": _elements(tensors)})


def _one_layer_cache(c: ModuleType, cfg: object, batch: int, max_len: int) -> object:
    """The attention's own cache for one layer; a tree from before ``new_cache`` has only the K/V cache."""
    if hasattr(c, "new_cache"):
        return c.new_cache(cfg, batch, max_len, n_layers=1)
    return c.KVCache(1, batch, cfg.n_kv_heads, max_len, cfg.head_dim)


def _attn(overrides: dict[str, object], mode: str) -> Callable[[ModuleType], Subject]:
    def build(c: ModuleType) -> Subject:
        cfg = arch(c, **overrides)
        attn = c.ATTENTIONS.get(cfg.attn.name)(cfg)
        if mode == "decode":
            b, context = DECODE_SHAPE
            cache = _one_layer_cache(c, cfg, b, context + 1)
            return _decode(lambda x, kv: attn(x, None, kv), cache, context, b, list(attn.parameters()))
        return timed_call(mode, attn, [torch.randn(*ATTN_SHAPE, D_MODEL)], list(attn.parameters()))
    return build


def _block(overrides: dict[str, object], mode: str) -> Callable[[ModuleType], Subject]:
    def build(c: ModuleType) -> Subject:
        model = c.build_decoder(arch(c, **overrides))
        if mode == "decode":
            b, context = DECODE_SHAPE
            return _decode(model, model.new_cache(b, context + 1), context, b, list(model.parameters()),
                           list(model.buffers()))
        subject = timed_call(mode, model, [torch.randn(*BLOCK_SHAPE, D_MODEL)], list(model.parameters()))
        subject.state += list(model.buffers())
        return subject
    return build


def all_cases() -> list[Case]:
    """The default case set, in a stable order: components first, then the block."""
    cases = []
    for name, mode in itertools.product(choice("norm").values, MODES[:2]):
        cases.append(Case("norm", name, mode, _norm(name, mode), NORM_SHAPE, {"norm": name}))
    for name, mode in itertools.product(choice("ffn").values, MODES[:2]):
        cases.append(Case("ffn", name, mode, _ffn(name, mode), (*FFN_SHAPE, D_MODEL), {"ffn": name}))
    for name, mode in itertools.product([v for v in choice("pos").values if _pos_timed(v)], MODES[:2]):
        cases.append(Case("pos", name, mode, _pos(name, mode), (*POS_SHAPE, D_MODEL), {"pos": name}))
    for (name, overrides), mode in itertools.product(attn_variants().items(), MODES):
        shape = (*DECODE_SHAPE, D_MODEL) if mode == "decode" else (*ATTN_SHAPE, D_MODEL)
        cases.append(Case("attn", name, mode, _attn(overrides, mode), shape, overrides))
    for (name, overrides), mode in itertools.product(block_variants().items(), MODES):
        shape = (*DECODE_SHAPE, D_MODEL) if mode == "decode" else (*BLOCK_SHAPE, D_MODEL)
        cases.append(Case("block", name, mode, _block(overrides, mode), shape, overrides))
    return cases


def matches(name: str, pattern: str) -> bool:
    """Whether case ``name`` (``component/variant/mode``) has ``pattern``'s segments as a run of its own: the pattern
    split on ``/`` (a leading or trailing ``/`` only marks a whole segment) must match that many consecutive segments
    of the name, each a glob within one segment (``*``, ``?``, ``[...]`` never cross a ``/``). So ``norm`` and
    ``norm/`` select ``norm/*/*`` and never ``block/qknorm/*``, ``block/gpt2`` selects ``block/gpt2/*``,
    ``block/*/forward`` every block's forward, ``forward`` every forward and ``*norm*`` every name with a segment
    containing ``norm``."""
    stripped = pattern.strip("/")
    if not stripped:
        return False
    parts, segments = stripped.split("/"), name.split("/")
    return any(all(fnmatch.fnmatchcase(s, p) for s, p in zip(segments[i:i + len(parts)], parts, strict=True))
               for i in range(len(segments) - len(parts) + 1))


def select(case_set: str = "default", patterns: Sequence[str] = ()) -> list[Case]:
    """The cases of ``case_set`` whose name matches any pattern in whole path segments (``matches``)."""
    cases = all_cases()
    if case_set == "ci":
        cases = [c for c in cases if c.name in CI_CASES]
    if patterns:
        cases = [c for c in cases if any(matches(c.name, p) for p in patterns)]
    return cases


def by_name(names: Sequence[str]) -> list[Case]:
    index = {c.name: c for c in all_cases()}
    return [index[n] for n in names]
