"""LayerNorm and RMSNorm against their written formulas."""

from __future__ import annotations

import pytest
import torch

from components import NORMS, LayerNorm, RMSNorm, build_lm


def _seeded(shape, seed=0, scale=1.0, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g) * scale + shift


def _set(norm, seed=1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        norm.weight.copy_(1.0 + 0.5 * torch.randn(norm.weight.shape, generator=g))
        if getattr(norm, "bias", None) is not None:
            norm.bias.copy_(0.5 * torch.randn(norm.bias.shape, generator=g))
    return norm


def layer_norm_ref(x, w, b, eps):
    x = x.double()
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased: divide by n
    return ((x - mean) / torch.sqrt(var + eps) * w.double() + b.double()).float()


def rms_norm_ref(x, w, eps):
    x = x.double()
    return (x * torch.rsqrt((x**2).mean(-1, keepdim=True) + eps) * w.double()).float()


def test_registry_names():
    assert NORMS.get("layernorm") is LayerNorm
    assert NORMS.get("rmsnorm") is RMSNorm


@pytest.mark.parametrize("dim", [4, 48])
def test_layernorm_matches_formula_with_biased_variance(dim):
    # dim=4: the unbiased (n-1) variance would differ by a factor 4/3, far outside the tolerance.
    norm = _set(LayerNorm(dim, eps=1e-5))
    x = _seeded((3, 5, dim), scale=2.0, shift=1.5)
    got = norm(x)
    torch.testing.assert_close(got, layer_norm_ref(x, norm.weight, norm.bias, 1e-5), atol=1e-5, rtol=1e-5)
    mean = x.mean(-1, keepdim=True)
    unbiased = (x - mean) / torch.sqrt(x.var(-1, unbiased=True, keepdim=True) + 1e-5) * norm.weight + norm.bias
    assert (got - unbiased).abs().max() > 1e-3


def test_rmsnorm_matches_formula():
    norm = _set(RMSNorm(48, eps=1e-5))
    x = _seeded((3, 5, 48), scale=2.0, shift=1.5)  # non-zero mean: RMSNorm must not subtract it
    got = norm(x)
    torch.testing.assert_close(got, rms_norm_ref(x, norm.weight, 1e-5), atol=1e-5, rtol=1e-5)
    ln = layer_norm_ref(x, norm.weight, torch.zeros(48), 1e-5)
    assert (got - ln).abs().max() > 1e-2


def test_rmsnorm_bf16_input_matches_fp32_formula():
    norm = _set(RMSNorm(256, eps=1e-5)).to(torch.bfloat16)
    x = _seeded((4, 7, 256), scale=3.0, shift=0.5).to(torch.bfloat16)
    got = norm(x)
    assert got.dtype == torch.bfloat16
    ref = rms_norm_ref(x.float(), norm.weight.float(), 1e-5)
    # bf16 keeps 8 significant bits: one rounding of the result (plus one of an intermediate) is < 2^-7.
    torch.testing.assert_close(got.float(), ref, rtol=2**-7, atol=1e-6)


def test_rmsnorm_half_input_is_computed_in_fp32():
    # x^2 = 1e6 overflows fp16 (max 65504): computed in fp16 this would give 0 or nan, not the formula.
    norm = RMSNorm(64, eps=1e-5).to(torch.float16)
    x = _seeded((2, 3, 64), scale=1000.0).to(torch.float16)
    got = norm(x)
    assert got.dtype == torch.float16
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.float(), rms_norm_ref(x.float(), norm.weight.float(), 1e-5), rtol=2e-3, atol=1e-3)


def test_rmsnorm_equals_layernorm_without_bias_on_zero_mean_input():
    rms = _set(RMSNorm(32, eps=1e-5))
    ln = LayerNorm(32, eps=1e-5)
    with torch.no_grad():
        ln.weight.copy_(rms.weight)
        ln.bias.zero_()
    x = _seeded((6, 32), scale=2.0, shift=3.0)
    x = x - x.mean(-1, keepdim=True)
    torch.testing.assert_close(rms(x), ln(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cls", [LayerNorm, RMSNorm])
def test_eps_is_honoured(cls):
    # Input of magnitude 1e-3: variance ~1e-6, so eps=1e-5 vs eps=1e-2 changes the output several-fold.
    x = _seeded((5, 16), scale=1e-3)
    outs = {}
    for eps in (1e-5, 1e-2):
        norm = _set(cls(16, eps=eps))
        assert norm.eps == eps
        if cls is LayerNorm:
            ref = layer_norm_ref(x, norm.weight, norm.bias, eps)
        else:
            ref = rms_norm_ref(x, norm.weight, eps)
        outs[eps] = norm(x)
        torch.testing.assert_close(outs[eps], ref, atol=1e-6, rtol=1e-4)
    assert (outs[1e-5] - outs[1e-2]).abs().max() > 0.1


def test_rmsnorm_has_no_bias_layernorm_has_one():
    assert [n for n, _ in RMSNorm(8).named_parameters()] == ["weight"]
    assert sorted(n for n, _ in LayerNorm(8).named_parameters()) == ["bias", "weight"]


def test_norm_eps_reaches_the_model(make_arch):
    arch = make_arch(norm="rmsnorm")
    arch.norm.eps = 3e-4
    lm = build_lm(arch)
    eps = {m.eps for m in lm.modules() if isinstance(m, RMSNorm)}
    assert eps == {3e-4}
    assert sum(isinstance(m, RMSNorm) for m in lm.modules()) == 2 * arch.model.n_layers + 1
