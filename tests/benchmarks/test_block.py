"""The timed unit of the harness (``components.build_decoder``: positions, one block, final norm) under each
sweep's variants: forward, forward+backward and one decode step with a KV cache.

One group per sweep and mode, with the GPT-2 baseline in each, so every table reads as that sweep.
"""

from __future__ import annotations

import pytest
import torch

from ablations.measure.flops import analytic_forward_flops, analytic_train_flops
from components import build_decoder
from tests.benchmarks import cases
from tests.benchmarks.calls import MODES, describe, make_call

CASES = cases.sweep_cases()


@pytest.mark.parametrize("mode", [*MODES, "decode"])
@pytest.mark.parametrize("sweep,variant", CASES, ids=[f"{s}-{v}" for s, v in CASES])
def test_block(timed, sweep, variant, mode):
    arch = cases.arch(**cases.SWEEPS[sweep][variant])
    torch.manual_seed(0)
    model = build_decoder(arch)
    d = arch.model.d_model
    if mode == "decode":
        b, context = cases.DECODE_SHAPE
        cache = model.new_cache(b, context + 1)
        cache.randomize_()  # decode cost does not depend on the cached values (a latent cache has no K and V)
        token = torch.randn(b, 1, d)

        def step() -> torch.Tensor:
            cache.pos = context  # rewind: every call decodes the token at position `context`
            return model(token, cache)

        call = make_call("forward", step, [])
        shape, group = [b, context, d], f"block:{sweep} decode [batch {b}, context {context}, d={d}]"
        analytic = analytic_forward_flops(arch, b, 1, context + 1)
    else:
        b, t = cases.BLOCK_SHAPE
        call = make_call(mode, model, [torch.randn(b, t, d)], list(model.parameters()))
        shape, group = [b, t, d], f"block:{sweep} {mode} [{b}x{t} d={d}]"
        analytic = (analytic_forward_flops if mode == "forward" else analytic_train_flops)(arch, b, t)
    info = describe(model, call, component="block", sweep=sweep, variant=variant, mode=mode, shape=shape,
                    pos=arch.pos.name, norm=arch.norm.name, ffn=arch.ffn.name, attn=arch.attn.name,
                    window=arch.attn.window, n_heads=arch.model.n_heads,
                    n_kv_heads=arch.n_kv_heads, ffn_hidden=arch.ffn_hidden, bias=arch.bias.enabled,
                    flops_analytic=analytic)
    timed(call, group=group, **info)
