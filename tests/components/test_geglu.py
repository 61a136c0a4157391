"""GeGLU (``ffn=geglu``, Shazeer 2020; Gemma's MLP) against a written-out fp64 reference and Hugging Face's
``GemmaMLP``; its width, parameters and work against SwiGLU's; its label; the decoder built with it."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ablations.results.variant_labels import variant_label
from blockbench import Step
from components import FFNS, ArchConfig, FFNConfig, ModelConfig, SwiGLU, build_decoder, count_parameters
from components.feedforward import GeGLU


def _x(shape, seed=0, scale=1.0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale


def gelu_tanh_ref(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def geglu_ref(ffn, x):
    """``down(gelu_tanh(gate(x)) * up(x))`` in float64 with the module's weights."""

    def lin(m, z):
        return F.linear(z, m.weight.double(), None if m.bias is None else m.bias.double())

    xd = x.double()
    return lin(ffn.down, gelu_tanh_ref(lin(ffn.gate, xd)) * lin(ffn.up, xd))


def test_registry_name_and_gated():
    assert FFNS.get("geglu") is GeGLU
    assert GeGLU.gated is True


@pytest.mark.parametrize("bias", [True, False])
def test_equals_fp64_reference(make_arch, rand_params, bias):
    arch = make_arch(ffn="geglu", bias=bias)
    ffn = rand_params(GeGLU(arch), seed=4, scale=2.0)
    assert all((m.bias is None) == (not bias) for m in (ffn.gate, ffn.up, ffn.down))
    x = _x((2, 5, arch.model.d_model), seed=1, scale=2.0)
    got = ffn(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), geglu_ref(ffn, x), atol=1e-5, rtol=1e-5)
    # The check can tell gate from up, and the tanh GELU from the erf one and from SiLU.
    gate = F.linear(x, ffn.gate.weight, ffn.gate.bias)
    up = F.linear(x, ffn.up.weight, ffn.up.bias)
    swapped = F.linear(gelu_tanh_ref(up) * gate, ffn.down.weight, ffn.down.bias)
    erf = F.linear(F.gelu(gate) * up, ffn.down.weight, ffn.down.bias)
    silu = F.linear(F.silu(gate) * up, ffn.down.weight, ffn.down.bias)
    assert (got - swapped).abs().max() > 1e-3
    assert (got - erf).abs().max() > 1e-5
    assert (got - silu).abs().max() > 1e-3


@torch.no_grad()
def test_matches_hugging_face_gemma_mlp(make_arch, rand_params):
    pytest.importorskip("transformers")
    from transformers import GemmaConfig
    from transformers.models.gemma.modeling_gemma import GemmaMLP

    arch = make_arch(ffn="geglu", bias=False, d_model=64, n_heads=4)  # Gemma's MLP has no biases
    ours = rand_params(GeGLU(arch), seed=7, scale=2.0)
    d, h = arch.model.d_model, arch.ffn_hidden
    hf = GemmaMLP(GemmaConfig(hidden_size=d, intermediate_size=h, hidden_act="gelu_pytorch_tanh")).float()
    hf.gate_proj.weight.copy_(ours.gate.weight)
    hf.up_proj.weight.copy_(ours.up.weight)
    hf.down_proj.weight.copy_(ours.down.weight)
    x = _x((3, 7, d), seed=8, scale=2.0)
    got, want = ours(x), hf(x)
    assert got.dtype == want.dtype == torch.float32
    # Same ops in the same order in float32: measured max |diff| 0 on torch 2.13 CPU; 1e-6 allows kernel changes.
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("d_model", [32, 100, 768, 4096])
def test_width_parameters_and_work_are_swiglus(make_arch, d_model):
    def built(name):
        arch = make_arch(ffn=name, bias=True, d_model=d_model, n_heads=4)
        with torch.device("meta"):
            return arch, FFNS.get(name)(arch)

    (geglu_arch, geglu), (swiglu_arch, swiglu) = built("geglu"), built("swiglu")
    # Llama's 2/3 rule, as SwiGLU (not GELU's 4d).
    assert geglu_arch.ffn_hidden == swiglu_arch.ffn_hidden != 4 * d_model
    assert geglu.gate.weight.shape == geglu.up.weight.shape == (geglu_arch.ffn_hidden, d_model)
    assert count_parameters(geglu) == count_parameters(swiglu)
    for step in (Step(2, 5, 5), Step(4, 1, 9)):
        assert GeGLU.work(geglu_arch, step).flops == SwiGLU.work(swiglu_arch, step).flops
        assert GeGLU.work(geglu_arch, step) == SwiGLU.work(swiglu_arch, step)
    # The width settings apply as to SwiGLU (Llama-2-7B's and -70B's widths).
    assert FFNConfig("geglu", multiple_of=256).hidden(4096) == 11008
    assert FFNConfig("geglu", multiple_of=4096, multiplier=1.3).hidden(8192) == 28672


def test_variant_label():
    assert variant_label(ArchConfig(ffn=FFNConfig("geglu"))) == "geglu"


def test_down_is_initialised_as_a_residual_projection(make_arch):
    # Same parameter names and shapes as SwiGLU: the same seed gives the same init, down scaled by 1/sqrt(2 L).
    arch = make_arch(ffn="geglu", n_layers=8)
    torch.manual_seed(0)
    geglu = build_decoder(arch)
    torch.manual_seed(0)
    swiglu = build_decoder(arch.with_values(ffn="swiglu"))
    torch.testing.assert_close(geglu.state_dict(), swiglu.state_dict(), atol=0, rtol=0)
    down = torch.cat([b.ffn.down.weight.flatten() for b in geglu.blocks])
    up = torch.cat([b.ffn.up.weight.flatten() for b in geglu.blocks])
    ratio = (down.std() / up.std()).item()
    assert abs(ratio - 1 / math.sqrt(2 * arch.model.n_layers)) < 0.05


@pytest.mark.parametrize("llama_like", [False, True], ids=["gpt2-block", "llama2-block"])
@torch.no_grad()
def test_decoder_full_forward_equals_token_by_token_decode(make_arch, rand_params, llama_like):
    if llama_like:
        arch = make_arch(pos="rope", norm="rmsnorm", ffn="geglu", attn="gqa", n_kv_heads=2, bias=False)
    else:
        arch = ArchConfig(model=ModelConfig(d_model=32, n_layers=2, n_heads=4, max_seq_len=64),
                         ffn=FFNConfig("geglu"))
    dec = rand_params(build_decoder(arch), seed=5)
    assert all(isinstance(b.ffn, GeGLU) for b in dec.blocks)
    x = _x((2, 11, arch.model.d_model), seed=6)
    full = dec(x)
    assert full.shape == x.shape and torch.isfinite(full).all()
    cache = dec.new_cache(batch_size=2)
    steps = [dec(x[:, :4], cache)] + [dec(x[:, i : i + 1], cache) for i in range(4, 11)]
    assert cache.pos == 11
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
