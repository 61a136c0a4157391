"""The parallel block (``block=parallel``) against a written-out fp64 reference, in its shared-norm (GPT-J, PaLM)
and two-norm (GPT-NeoX) forms, with MHA/GQA and RoPE/learned positions; its cached decode; its parameters and work;
``block=sequential`` bit-identical to a model built without the choice; parity with Hugging Face's ``GPTNeoXLayer``
(``use_parallel_residual=True``) and ``GPTJBlock``; its variant label."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ablations.results.variant_labels import variant_label
from blockbench import Step, Work
from components import (
    ArchConfig,
    Block,
    Decoder,
    KVCache,
    LayerNorm,
    ModelConfig,
    RotaryPositions,
    build_decoder,
    count_parameters,
)
from components.block import SequentialResidual, residual_of
from components.norms import NORMS
from components.parallel import BLOCKS, BlockConfig, ParallelResidual

TOL = dict(atol=1e-5, rtol=1e-5)
BATCH, SEQ, PREFILL = 2, 12, 5
SHARED = [True, False]
ATTN = [("mha", None), ("gqa", 2)]
POS = [("rope", "half"), ("rope", "interleaved"), ("learned", "half")]
# GPT-2's norm and FFN, and Llama-2's: the residual structure must not depend on which.
NORM_FFN = [("layernorm", "gelu"), ("rmsnorm", "swiglu")]


def _x(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _max_err(a, b):
    return (a.double() - b.double()).abs().max().item()


def parallel(arch: ArchConfig, shared: bool = True) -> ArchConfig:
    return arch.replace(block=BlockConfig("parallel", shared_norm=shared))


# --- the written-out reference, fp64 ---------------------------------------------------------------------------


def lin_ref(m, z):
    return F.linear(z, m.weight.double(), None if m.bias is None else m.bias.double())


def norm_ref(m, x):
    """LayerNorm ``(x - mean) / sqrt(var + eps) * w + b`` or RMSNorm ``x / sqrt(mean(x^2) + eps) * w``."""
    if isinstance(m, LayerNorm):
        centred = x - x.mean(-1, keepdim=True)
        return (centred / torch.sqrt(centred.square().mean(-1, keepdim=True) + m.eps) * m.weight.double()
                + m.bias.double())
    return x / torch.sqrt(x.square().mean(-1, keepdim=True) + m.eps) * m.weight.double()


def ffn_ref(m, x):
    """GELU MLP with GELU's tanh form written out, or SwiGLU ``down(silu(gate x) * up x)``."""
    if hasattr(m, "gate"):
        g = lin_ref(m.gate, x)
        return lin_ref(m.down, g * torch.sigmoid(g) * lin_ref(m.up, x))
    u = lin_ref(m.up, x)
    gelu = 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))
    return lin_ref(m.down, gelu)


def rope_ref(x, layout, theta=10000.0):
    """RoPE for positions 0..seq-1 of x (batch, heads, seq, head_dim): pairs (i, i + hd/2) or (2i, 2i+1)."""
    hd, t = x.shape[-1], x.shape[-2]
    inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    angles = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    cos, sin = angles.cos(), angles.sin()
    if layout == "half":
        a, b = x[..., : hd // 2], x[..., hd // 2 :]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)


def attention_ref(attn, h, layout):
    """Causal softmax(q k^T / sqrt(d)) v; query head i reads KV head i // (n_heads // n_kv_heads)."""
    b, t, _ = h.shape
    nh, nkv, hd = attn.n_heads, attn.n_kv_heads, attn.head_dim
    q = lin_ref(attn.q, h).view(b, t, nh, hd).transpose(1, 2)
    k = lin_ref(attn.k, h).view(b, t, nkv, hd).transpose(1, 2)
    v = lin_ref(attn.v, h).view(b, t, nkv, hd).transpose(1, 2)
    if layout is not None:
        q, k = rope_ref(q, layout), rope_ref(k, layout)
    heads = torch.arange(nh) // (nh // nkv)
    scores = q @ k[:, heads].transpose(-1, -2) / math.sqrt(hd)
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    y = torch.softmax(scores, -1) @ v[:, heads]
    return lin_ref(attn.out, y.transpose(1, 2).reshape(b, t, nh * hd))


def block_ref(block, x, shared, layout, parallel_form=True):
    """``x + attn(n1(x)) + ffn(n1(x) or n2(x))``; ``parallel_form=False``: the sequential block, to show they differ."""
    if not parallel_form:
        x = x + attention_ref(block.attn, norm_ref(block.norm1, x), layout)
        return x + ffn_ref(block.ffn, norm_ref(block.norm2, x))
    h = norm_ref(block.norm1, x)
    return x + attention_ref(block.attn, h, layout) + ffn_ref(block.ffn, h if shared else norm_ref(block.norm2, x))


def decoder_ref(model, x, shared, **kw):
    x = x.double()
    arch = model.arch
    layout = arch.pos.layout if arch.pos.name == "rope" else None
    if arch.pos.name == "learned":
        x = x + model.positions.table.weight[: x.shape[1]].double()
    for block in model.blocks:
        x = block_ref(block, x, shared, layout, **kw)
    return norm_ref(model.norm, x)


# --- (a) the reference -------------------------------------------------------------------------------------------


@torch.no_grad()
@pytest.mark.parametrize("norm,ffn", NORM_FFN, ids=[f"{n}-{f}" for n, f in NORM_FFN])
@pytest.mark.parametrize("pos,layout", POS, ids=[p if p != "rope" else f"rope-{lay}" for p, lay in POS])
@pytest.mark.parametrize("attn,kv", ATTN, ids=[a for a, _ in ATTN])
@pytest.mark.parametrize("shared", SHARED, ids=["shared", "two-norms"])
def test_parallel_decoder_matches_written_out_reference(make_arch, rand_params, shared, attn, kv, pos, layout, norm,
                                                        ffn):
    arch = parallel(make_arch(pos=pos, layout=layout, norm=norm, ffn=ffn, attn=attn, n_kv_heads=kv), shared)
    model = rand_params(build_decoder(arch), seed=1).eval()
    assert all((hasattr(b, "norm2")) == (not shared) for b in model.blocks)
    x = _x((BATCH, SEQ, arch.model.d_model), seed=2)
    got = model(x)
    want = decoder_ref(model, x, shared)
    # Measured max |diff| 1.6e-6 over the grid (outputs up to 4.3).
    torch.testing.assert_close(got, want.float(), **TOL)
    # The reference tells the forms apart: with two norms, the shared-norm and the sequential formulas are far off.
    if not shared:
        assert _max_err(got, decoder_ref(model, x, True)) > 1e-3
        assert _max_err(got, decoder_ref(model, x, shared, parallel_form=False)) > 1e-3


@torch.no_grad()
def test_parallel_block_is_not_the_sequential_one(make_arch, rand_params):
    """Same modules, same weights: the shared-norm block and the sequential one give different rows (the FFN no
    longer sees what attention wrote)."""
    seq = rand_params(Block(make_arch()), seed=3).eval()
    par = Block(parallel(make_arch(), shared=False)).eval()
    par.load_state_dict(seq.state_dict())  # the two-norm form has exactly the sequential block's modules
    x = _x((BATCH, SEQ, 32), seed=4)
    assert _max_err(seq(x), par(x)) > 1e-3
    assert residual_of(parallel(make_arch())) is ParallelResidual and residual_of(make_arch()) is SequentialResidual


# --- (b) cached decode ---------------------------------------------------------------------------------------------


@torch.no_grad()
@pytest.mark.parametrize("pos,layout", POS, ids=[p if p != "rope" else f"rope-{lay}" for p, lay in POS])
@pytest.mark.parametrize("attn,kv", ATTN, ids=[a for a, _ in ATTN])
@pytest.mark.parametrize("shared", SHARED, ids=["shared", "two-norms"])
def test_parallel_decoder_cached_decode_matches_full_forward(make_arch, rand_params, shared, attn, kv, pos, layout):
    arch = parallel(make_arch(pos=pos, layout=layout, attn=attn, n_kv_heads=kv), shared)
    model = rand_params(build_decoder(arch), seed=5).eval()
    x = _x((BATCH, SEQ, 32), seed=6)
    full = model(x)
    cache = model.new_cache(BATCH, SEQ)
    rows = [model(x[:, :PREFILL], cache)] + [model(x[:, i : i + 1], cache) for i in range(PREFILL, SEQ)]
    # Measured max |diff| 1.1e-6 over the grid (outputs up to 5.0).
    torch.testing.assert_close(torch.cat(rows, dim=1), full, **TOL)
    assert cache.pos == SEQ


# --- (c) parameters and work ------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_shared_norm_drops_one_norm_per_layer_and_its_work(make_arch, norm):
    arch = make_arch(norm=norm, n_layers=3)
    d, layers = arch.model.d_model, arch.model.n_layers
    norm_params = {"layernorm": 2 * d, "rmsnorm": d}[norm]
    seq, shared, two = (count_parameters(build_decoder(each_arch, device="meta"))
                        for each_arch in (arch, parallel(arch, True), parallel(arch, False)))
    assert seq - shared == layers * norm_params
    assert two == seq
    step = Step(2, 5, 9)
    one_norm = NORMS.get(norm).work(arch, step)
    assert Block.work(parallel(arch, True), step) + one_norm == Block.work(arch, step)
    assert Block.work(parallel(arch, False), step) == Block.work(arch, step)
    assert Decoder.work(parallel(arch, True), step) + layers * one_norm == Decoder.work(arch, step)
    assert ParallelResidual.norms(parallel(arch, True)) == 1 and ParallelResidual.norms(parallel(arch, False)) == 2
    assert ParallelResidual.work(parallel(arch), step) == Work()
    # The two-norm block registers the sequential block's modules in the same order: the same init draws.
    torch.manual_seed(0)
    a = build_decoder(arch).state_dict()
    torch.manual_seed(0)
    b = build_decoder(parallel(arch, False)).state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --- (d) block=sequential changes nothing ----------------------------------------------------------------------


@torch.no_grad()
@pytest.mark.parametrize("preset", ["gpt2", "llama2"])
def test_sequential_is_bit_identical_to_a_model_without_the_choice(make_arch, preset):
    base = make_arch() if preset == "gpt2" else make_arch(pos="rope", norm="rmsnorm", ffn="swiglu", attn="gqa",
                                                        n_kv_heads=2, bias=False)
    without = ArchConfig(model=base.model, **{g: getattr(base, g) for g in base.groups if g != "block"})
    assert BLOCKS.get("sequential") is None
    torch.manual_seed(0)
    m1 = build_decoder(without)
    torch.manual_seed(0)
    m2 = build_decoder(without.replace(block=BlockConfig("sequential")))
    s1, s2 = m1.state_dict(), m2.state_dict()
    assert list(s1) == list(s2) and all(torch.equal(s1[k], s2[k]) for k in s1)
    x = _x((BATCH, SEQ, 32), seed=7)
    assert torch.equal(m1(x), m2(x))
    assert without.block == BlockConfig("sequential")


def test_variant_label_names_the_parallel_block():
    m = ModelConfig(d_model=32, n_layers=2, n_heads=4, max_seq_len=32)
    assert variant_label(ArchConfig(model=m)) == "gpt2"
    assert variant_label(ArchConfig(model=m, block=BlockConfig("sequential"))) == "gpt2"
    assert variant_label(ArchConfig(model=m, block=BlockConfig("parallel"))) == "parallel"


# --- (e) Hugging Face parity --------------------------------------------------------------------------------------


def causal_mask(t):
    """HF's eager additive mask (1, 1, t, t): 0 where query i sees key j <= i, else fp32's min."""
    seen = torch.ones(t, t, dtype=torch.bool).tril()
    return torch.zeros(1, 1, t, t).masked_fill(~seen, torch.finfo(torch.float32).min)


def block_decode(block, arch, x):
    """Our block over a prefill of PREFILL tokens, then each later token alone, through a one-layer KV cache."""
    positions = RotaryPositions(arch)
    cache = KVCache(1, x.shape[0], arch.n_kv_heads, SEQ, arch.head_dim)
    rows = []
    for start, end in [(0, PREFILL), *((i, i + 1) for i in range(PREFILL, x.shape[1]))]:
        rows.append(block(x[:, start:end], positions.rotation(end - start, start), cache))
        cache.pos = end
    return torch.cat(rows, dim=1)


def _copy(dst, src):
    assert dst.shape == src.shape, (dst.shape, src.shape)
    dst.copy_(src)


def neox_fused(q, k, v, heads):
    """GPT-NeoX's ``query_key_value`` rows: per head, that head's q, k and v rows in turn (its forward views the
    output as (.., heads, 3 * head_size) and chunks the last dimension in three)."""
    return torch.stack([t.reshape(heads, -1, *t.shape[1:]) for t in (q, k, v)], dim=1).reshape(-1, *q.shape[1:])


@torch.no_grad()
def test_two_norm_parallel_block_matches_hf_gpt_neox_layer(make_arch, rand_params):
    transformers = pytest.importorskip("transformers")
    from transformers.models.gpt_neox import modeling_gpt_neox

    arch = parallel(make_arch(pos="rope", layout="half", norm="layernorm", ffn="gelu", attn="mha", bias=True),
                   shared=False)
    ours = rand_params(Block(arch), seed=8).eval()
    d, h = arch.model.d_model, arch.model.n_heads
    config = transformers.GPTNeoXConfig(
        vocab_size=53, hidden_size=d, num_hidden_layers=1, num_attention_heads=h, intermediate_size=arch.ffn_hidden,
        max_position_embeddings=arch.model.max_seq_len, rotary_pct=1.0, rotary_emb_base=10000,
        use_parallel_residual=True, hidden_act="gelu_new", layer_norm_eps=1e-5, attention_bias=True,
        hidden_dropout=0.0, attention_dropout=0.0)
    config._attn_implementation = "eager"
    hf = modeling_gpt_neox.GPTNeoXLayer(config, layer_idx=0).eval()
    a, f = ours.attn, ours.ffn
    for dst, src in ((hf.input_layernorm, ours.norm1), (hf.post_attention_layernorm, ours.norm2),
                     (hf.attention.dense, a.out), (hf.mlp.dense_h_to_4h, f.up), (hf.mlp.dense_4h_to_h, f.down)):
        _copy(dst.weight, src.weight)
        _copy(dst.bias, src.bias)
    _copy(hf.attention.query_key_value.weight, neox_fused(a.q.weight, a.k.weight, a.v.weight, h))
    _copy(hf.attention.query_key_value.bias, neox_fused(a.q.bias, a.k.bias, a.v.bias, h))
    x = _x((BATCH, SEQ, d), seed=9)
    position_ids = torch.arange(SEQ)[None]
    position_embeddings = modeling_gpt_neox.GPTNeoXRotaryEmbedding(config)(x, position_ids)

    def run():
        out = hf(x, attention_mask=causal_mask(SEQ), position_ids=position_ids,
                 position_embeddings=position_embeddings)
        return out[0] if isinstance(out, tuple) else out

    want = run()
    got = ours(x, RotaryPositions(arch).rotation(SEQ))
    # Measured max |diff| 4.8e-7 (full sequence) and 9.5e-7 (cached decode); outputs up to 4.7.
    torch.testing.assert_close(got, want, **TOL)
    torch.testing.assert_close(block_decode(ours, arch, x), want, **TOL)
    # The shared-norm form (norm2 ignored) is caught, and so is a plain [q; k; v] stacking of the fused rows.
    shared = Block(parallel(arch, True)).eval()
    shared.load_state_dict({k: v for k, v in ours.state_dict().items() if not k.startswith("norm2.")})
    assert _max_err(shared(x, RotaryPositions(arch).rotation(SEQ)), want) > 1e-3
    hf.attention.query_key_value.weight.copy_(torch.cat([a.q.weight, a.k.weight, a.v.weight]))
    assert _max_err(got, run()) > 1e-3


@torch.no_grad()
def test_shared_norm_parallel_block_matches_hf_gptj_block(make_arch, rand_params):
    transformers = pytest.importorskip("transformers")
    from transformers.models.gptj import modeling_gptj

    arch = parallel(make_arch(pos="rope", layout="interleaved", norm="layernorm", ffn="gelu", attn="mha", bias=False))
    ours = rand_params(Block(arch), seed=10).eval()
    d, h = arch.model.d_model, arch.model.n_heads
    config = transformers.GPTJConfig(
        vocab_size=53, n_positions=arch.model.max_seq_len, n_embd=d, n_layer=1, n_head=h, rotary_dim=arch.head_dim,
        n_inner=arch.ffn_hidden, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        layer_norm_epsilon=1e-5)
    config._attn_implementation = "eager"
    hf = modeling_gptj.GPTJBlock(config, layer_idx=0).eval()
    a, f = ours.attn, ours.ffn
    _copy(hf.ln_1.weight, ours.norm1.weight)
    _copy(hf.ln_1.bias, ours.norm1.bias)  # LayerNorm keeps its shift with bias=off, as GPT-J's ln_1
    for dst, src in ((hf.attn.q_proj, a.q), (hf.attn.k_proj, a.k), (hf.attn.v_proj, a.v), (hf.attn.out_proj, a.out),
                     (hf.mlp.fc_in, f.up), (hf.mlp.fc_out, f.down)):
        _copy(dst.weight, src.weight)
    # GPT-J's MLP has biases where ours (bias=off) has none: zero them.
    hf.mlp.fc_in.bias.zero_()
    hf.mlp.fc_out.bias.zero_()
    x = _x((BATCH, SEQ, d), seed=11)
    position_ids = torch.arange(SEQ)[None]
    position_embeddings = modeling_gptj.GPTJRotaryEmbedding(config)(x, position_ids)  # (sin, cos)

    def run():
        out = hf(x, attention_mask=causal_mask(SEQ), position_ids=position_ids,
                 position_embeddings=position_embeddings)
        return out[0] if isinstance(out, tuple) else out

    want = run()
    got = ours(x, RotaryPositions(arch).rotation(SEQ))
    # Measured max |diff| 3.6e-7 (full sequence) and 9.5e-7 (cached decode), outputs up to 4.2; HF's angles
    # are fp32, ours fp64.
    torch.testing.assert_close(got, want, **TOL)
    torch.testing.assert_close(block_decode(ours, arch, x), want, **TOL)
    # GPT-J rotates adjacent pairs: HF's rotate_half layout is caught.
    half = RotaryPositions(arch.replace(pos=type(arch.pos)("rope", layout="half"))).rotation(SEQ)
    assert _max_err(ours(x, half), want) > 1e-3
    # A bias left in GPT-J's MLP is caught.
    hf.mlp.fc_out.bias.fill_(0.1)
    assert _max_err(got, run()) > 1e-3
