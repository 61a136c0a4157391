"""One benchmark per component variant, forward and forward+backward (and a decode step for attention).

Each group is one component and mode, so pytest-benchmark's table puts the choices side by side.
"""

from __future__ import annotations

import pytest
import torch

from blockbench import choice
from components import ATTENTIONS, NORMS, POSITIONS, new_cache
from components.positions import apply_rotation
from tests.benchmarks import cases
from tests.benchmarks.calls import MODES, describe, make_call


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", choice("norm").values)
def test_norm(timed, name, mode):
    rows, width = cases.NORM_SHAPE
    norm = NORMS.get(name)(width, eps=1e-5)
    x = torch.randn(rows, width)
    call = make_call(mode, norm, [x], list(norm.parameters()))
    info = describe(norm, call, component="norm", variant=name, mode=mode, shape=[rows, width])
    timed(call, group=f"norm {mode} [{rows}x{width}]", **info)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", choice("ffn").values)
def test_ffn(timed, name, mode):
    from components import FFNS

    arch = cases.arch(ffn=name)
    ffn = FFNS.get(name)(arch)
    b, t = cases.FFN_SHAPE
    x = torch.randn(b, t, arch.model.d_model)
    call = make_call(mode, ffn, [x], list(ffn.parameters()))
    info = describe(ffn, call, component="ffn", variant=name, mode=mode, shape=[b, t, arch.model.d_model],
                    hidden=arch.ffn_hidden)
    timed(call, group=f"ffn {mode} [{b}x{t} d={arch.model.d_model}]", **info)


def position_cases() -> list[str]:
    """Every position scheme that adds something to time (NoPE adds nothing), a rotation in each of its layouts."""
    out = []
    for value in choice("pos").values:
        probe = POSITIONS.get(value)(cases.arch(pos=value))
        if probe.rotation(1) is not None:
            out += [f"{value}-{layout}" for layout in ("half", "interleaved")]
        elif list(probe.parameters()) or probe.score_bias() is not None:
            out.append(value)
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", position_cases())
def test_positions(timed, name, mode):
    """What each variant adds to a forward: the table added at the input, Q and K rotated, or the scores' bias."""
    b, t = cases.POS_SHAPE
    d, heads = cases.D_MODEL, cases.N_HEADS
    value, _, layout = name.partition("-")
    arch = cases.arch(pos=value)
    if layout:
        arch.pos.layout = layout
    pos = POSITIONS.get(value)(arch)
    if list(pos.parameters()):
        inputs = [torch.randn(b, t, d)]

        def fn(x: torch.Tensor) -> torch.Tensor:
            return pos.embed(x)
    elif layout:
        inputs = [torch.randn(b, heads, t, d // heads) for _ in range(2)]

        def fn(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            rot = pos.rotation(t)
            return apply_rotation(q, rot), apply_rotation(k, rot)
    else:
        inputs = [torch.randn(b, heads, t, t)]
        bias = pos.score_bias()

        def fn(scores: torch.Tensor) -> torch.Tensor:
            return scores + bias(0, t, t, scores.device)
    call = make_call(mode, fn, inputs, list(pos.parameters()))
    info = describe(pos, call, component="pos", variant=name, mode=mode, shape=[b, t, d])
    timed(call, group=f"pos {mode} [{b}x{t} d={d}]", **info)


@pytest.mark.parametrize("mode", [*MODES, "decode"])
@pytest.mark.parametrize("name", list(cases.ATTENTIONS))
def test_attention(timed, name, mode):
    arch = cases.arch(attn=name, kv=cases.ATTENTIONS[name])
    attn = ATTENTIONS.get(arch.attn.name)(arch)
    d = arch.model.d_model
    if mode == "decode":
        b, context = cases.DECODE_SHAPE
        cache = new_cache(arch, b, context + 1, n_layers=1)
        cache.randomize_()
        token = torch.randn(b, 1, d)

        def step() -> torch.Tensor:
            cache.pos = context  # attention alone never advances pos; set it anyway so each call is the same
            return attn(token, None, cache)

        call = make_call("forward", step, [])
        shape, group = [b, context, d], f"attn decode [batch {b}, context {context}, d={d}]"
    else:
        b, t = cases.ATTN_SHAPE
        call = make_call(mode, attn, [torch.randn(b, t, d)], list(attn.parameters()))
        shape, group = [b, t, d], f"attn {mode} [{b}x{t} d={d}]"
    info = describe(attn, call, component="attn", variant=name, mode=mode, shape=shape, n_heads=arch.model.n_heads,
                    n_kv_heads=arch.n_kv_heads)
    timed(call, group=group, **info)
