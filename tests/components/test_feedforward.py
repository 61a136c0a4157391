"""GELU (tanh approximation), the GELU MLP, SwiGLU and the hidden-width rule."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from components import FFNS, FFNConfig, GeluMLP, SwiGLU, ffn_hidden_dim, preset
from components.feedforward import gelu_tanh


def gelu_tanh_formula(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _x(shape, seed=0, scale=1.0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale


def test_registry_names():
    assert FFNS.get("gelu") is GeluMLP
    assert FFNS.get("swiglu") is SwiGLU


def test_gelu_tanh_matches_formula_and_not_erf():
    x = torch.linspace(-6.0, 6.0, 4001, dtype=torch.float64)
    torch.testing.assert_close(gelu_tanh(x), gelu_tanh_formula(x), atol=1e-6, rtol=0)
    xf = x.float()
    torch.testing.assert_close(gelu_tanh(xf), gelu_tanh_formula(xf), atol=1e-6, rtol=1e-6)
    # The two GELUs differ by up to ~4.7e-4: swapping in the erf form must fail the check above.
    assert (gelu_tanh_formula(x) - gelu_erf(x)).abs().max() > 1e-4


def test_gelu_mlp_equals_explicit_computation(make_arch, rand_params):
    arch = make_arch(ffn="gelu", bias=True)
    mlp = rand_params(GeluMLP(arch), seed=3, scale=2.0)
    assert mlp.up.weight.shape == (4 * arch.model.d_model, arch.model.d_model)
    x = _x((2, 5, arch.model.d_model))
    h = F.linear(x, mlp.up.weight, mlp.up.bias)
    want = F.linear(gelu_tanh_formula(h), mlp.down.weight, mlp.down.bias)
    got = mlp(x)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    erf_version = F.linear(gelu_erf(h), mlp.down.weight, mlp.down.bias)
    assert (got - erf_version).abs().max() > 1e-5


@pytest.mark.parametrize("bias", [True, False])
def test_swiglu_equals_explicit_computation(make_arch, rand_params, bias):
    arch = make_arch(ffn="swiglu", bias=bias)
    ffn = rand_params(SwiGLU(arch), seed=4, scale=2.0)
    assert (ffn.gate.bias is None) == (not bias)
    x = _x((2, 5, arch.model.d_model), seed=1)
    gate = F.linear(x, ffn.gate.weight, ffn.gate.bias)
    up = F.linear(x, ffn.up.weight, ffn.up.bias)
    want = F.linear(gate * torch.sigmoid(gate) * up, ffn.down.weight, ffn.down.bias)
    got = ffn(x)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    swapped = F.linear(up * torch.sigmoid(up) * gate, ffn.down.weight, ffn.down.bias)
    assert (got - swapped).abs().max() > 1e-3


def test_hidden_width_rule():
    assert ffn_hidden_dim(FFNConfig("swiglu", multiple_of=256), 4096) == 11008
    assert ffn_hidden_dim(FFNConfig("swiglu", multiple_of=256), 5120) == 13824  # Llama-2-13B
    assert ffn_hidden_dim(FFNConfig("swiglu", multiple_of=4096, multiplier=1.3), 8192) == 28672
    assert ffn_hidden_dim(FFNConfig("gelu"), 768) == 3072
    assert ffn_hidden_dim(FFNConfig("gelu", hidden_dim=100), 768) == 100
    assert ffn_hidden_dim(FFNConfig("swiglu", hidden_dim=100, multiple_of=256), 768) == 100
    # multiple_of rounds up, never down: int(8*100/3)=266 -> 272 with 16, 512 with 256.
    assert ffn_hidden_dim(FFNConfig("swiglu", multiple_of=16), 100) == 272
    assert ffn_hidden_dim(FFNConfig("swiglu", multiple_of=256), 100) == 512


def test_explicit_hidden_dim_builds_that_width(make_arch):
    arch = make_arch(ffn="swiglu")
    arch.ffn.hidden_dim = 40
    ffn = SwiGLU(arch)
    assert ffn.gate.weight.shape == ffn.up.weight.shape == (40, arch.model.d_model)
    assert ffn.down.weight.shape == (arch.model.d_model, 40)


def test_presets_build_llama_widths():
    assert preset("llama2-7b").ffn_hidden == 11008
    assert preset("llama2-13b").ffn_hidden == 13824
    assert preset("llama2-70b").ffn_hidden == 28672
    assert preset("gpt2").ffn_hidden == 3072


def test_swiglu_parameter_count_matches_gelu_at_gpt2_width(make_arch):
    def count(name):
        arch = make_arch(ffn=name, bias=False, d_model=768, n_heads=12)
        arch.ffn.multiple_of = 8
        with torch.device("meta"):
            module = FFNS.get(name)(arch)
        return sum(p.numel() for p in module.parameters())

    gelu, swiglu = count("gelu"), count("swiglu")
    assert gelu == 8 * 768 * 768
    assert abs(swiglu - gelu) / gelu < 0.01
