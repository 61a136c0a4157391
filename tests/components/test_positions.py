"""RoPE (both layouts) against reference implementations, and the learned position table."""

from __future__ import annotations

import pytest
import torch

from components import POSITIONS, LearnedPositions, NoPositions, RotaryPositions, build_decoder
from components.positions import Rotation, apply_rotation

LAYOUTS = ["half", "interleaved"]


def _x(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _rope(make_arch, layout="half", max_seq_len=2048, d_model=64, n_heads=4):
    return RotaryPositions(
        make_arch(pos="rope", layout=layout, max_seq_len=max_seq_len, d_model=d_model, n_heads=n_heads)
    )


def inv_freq_ref(head_dim, theta=10000.0):
    return 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64)[: head_dim // 2] / head_dim)


def meta_rope_ref(x, positions, theta=10000.0):
    """Meta's llama ``apply_rotary_emb``: adjacent pairs as complex numbers times ``freqs_cis`` (here in fp64)."""
    hd = x.shape[-1]
    freqs = torch.outer(positions.double(), inv_freq_ref(hd, theta))
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # (seq, hd/2) complex128
    xc = torch.view_as_complex(x.double().reshape(*x.shape[:-1], hd // 2, 2))
    return torch.view_as_real(xc * freqs_cis).flatten(-2).float()


def hf_rope_ref(x, positions, theta=10000.0):
    """HF's ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin`` with the frequencies repeated twice."""
    hd = x.shape[-1]
    freqs = torch.outer(positions.double(), inv_freq_ref(hd, theta))
    emb = torch.cat((freqs, freqs), dim=-1)
    xd = x.double()
    x1, x2 = xd[..., : hd // 2], xd[..., hd // 2 :]
    rotate_half = torch.cat((-x2, x1), dim=-1)
    return (xd * emb.cos() + rotate_half * emb.sin()).float()


def test_registry_names():
    assert POSITIONS.get("rope") is RotaryPositions
    assert POSITIONS.get("learned") is LearnedPositions
    assert POSITIONS.get("none") is NoPositions


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotation_preserves_norms(make_arch, layout):
    rope = _rope(make_arch, layout)
    x = _x((2, 3, 40, 16)) * 3.0
    out = apply_rotation(x, rope.rotation(40, offset=500))
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=1e-5, rtol=1e-5)
    assert (out - x).abs().max() > 0.1  # and it did rotate


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotation_at_position_zero_is_identity(make_arch, layout):
    rope = _rope(make_arch, layout)
    x = _x((2, 3, 1, 16))
    rot = rope.rotation(1, offset=0)
    torch.testing.assert_close(rot.cos, torch.ones_like(rot.cos), atol=0, rtol=0)
    torch.testing.assert_close(rot.sin, torch.zeros_like(rot.sin), atol=0, rtol=0)
    torch.testing.assert_close(apply_rotation(x, rot), x, atol=0, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scores_depend_only_on_relative_position(make_arch, layout):
    rope = _rope(make_arch, layout)
    q, k = _x((1, 1, 1, 16), seed=1), _x((1, 1, 1, 16), seed=2)

    def score(m, n):
        qm = apply_rotation(q, rope.rotation(1, offset=m))
        kn = apply_rotation(k, rope.rotation(1, offset=n))
        return (qm * kn).sum().item()

    for m, n, shift in [(5, 2, 11), (3, 9, 100), (0, 0, 37), (17, 4, 1000)]:
        assert score(m, n) == pytest.approx(score(m + shift, n + shift), abs=1e-4)
    # It does depend on the distance (else the test above is vacuous).
    assert abs(score(5, 2) - score(6, 2)) > 1e-3


def test_interleaved_equals_meta_complex_reference(make_arch):
    rope = _rope(make_arch, "interleaved")
    x = _x((2, 3, 9, 16), seed=3)
    for offset in (0, 7, 1500):
        got = apply_rotation(x, rope.rotation(9, offset=offset))
        want = meta_rope_ref(x, torch.arange(offset, offset + 9))
        torch.testing.assert_close(got, want, atol=2e-6, rtol=1e-5)


def test_half_equals_hf_rotate_half_reference(make_arch):
    rope = _rope(make_arch, "half")
    x = _x((2, 3, 9, 16), seed=4)
    for offset in (0, 7, 1500):
        got = apply_rotation(x, rope.rotation(9, offset=offset))
        want = hf_rope_ref(x, torch.arange(offset, offset + 9))
        torch.testing.assert_close(got, want, atol=2e-6, rtol=1e-5)
    # The two layouts are different maps on the same input.
    rot = rope.rotation(9, offset=7)
    other = apply_rotation(x, Rotation(rot.cos, rot.sin, "interleaved"))
    assert (apply_rotation(x, rot) - other).abs().max() > 0.1


def test_theta_is_used(make_arch):
    arch = make_arch(pos="rope", d_model=64, n_heads=4)
    arch.pos.theta = 500000.0
    rope = RotaryPositions(arch)
    x = _x((1, 2, 6, 16), seed=5)
    got = apply_rotation(x, rope.rotation(6, offset=30))
    torch.testing.assert_close(got, hf_rope_ref(x, torch.arange(30, 36), theta=500000.0), atol=2e-6, rtol=1e-5)
    assert (got - hf_rope_ref(x, torch.arange(30, 36))).abs().max() > 1e-3


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotation_offset_is_a_slice_of_the_full_table(make_arch, layout):
    rope = _rope(make_arch, layout)
    full = rope.rotation(60, offset=0)
    part = rope.rotation(12, offset=37)
    torch.testing.assert_close(part.cos, full.cos[37:49], atol=0, rtol=0)
    torch.testing.assert_close(part.sin, full.sin[37:49], atol=0, rtol=0)
    assert part.layout == layout
    # and the table holds cos/sin of pos * theta^(-2i/hd), accurate to fp32 even at large positions
    angles = torch.outer(torch.arange(1990, 2000, dtype=torch.float64), inv_freq_ref(16))
    far = rope.rotation(10, offset=1990)
    assert far.cos.dtype == far.sin.dtype == torch.float32
    torch.testing.assert_close(far.cos.double(), angles.cos(), atol=1e-7, rtol=0)
    torch.testing.assert_close(far.sin.double(), angles.sin(), atol=1e-7, rtol=0)


def test_rotation_of_bf16_input_is_done_in_fp32(make_arch):
    rope = _rope(make_arch, "half")
    x = _x((1, 2, 5, 16), seed=6).to(torch.bfloat16)
    got = apply_rotation(x, rope.rotation(5, offset=1000))
    assert got.dtype == torch.bfloat16
    want = hf_rope_ref(x.float(), torch.arange(1000, 1005))
    torch.testing.assert_close(got.float(), want, rtol=2**-7, atol=1e-2)


def _interleaved_to_half_perm(n_heads, head_dim):
    """Row permutation of a Q/K projection, per head h: half row (h, i) <- interleaved row (h, 2i), and
    half row (h, i + hd/2) <- interleaved row (h, 2i + 1)."""
    per_head = torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))
    return torch.cat([h * head_dim + per_head for h in range(n_heads)])


@pytest.mark.parametrize("attn,n_kv", [("mha", None), ("gqa", 2)])
def test_half_and_interleaved_give_same_outputs_after_permuting_qk_rows(make_arch, rand_params, attn, n_kv):
    arch_i = make_arch(pos="rope", layout="interleaved", norm="rmsnorm", ffn="swiglu", attn=attn, n_kv_heads=n_kv)
    arch_h = make_arch(pos="rope", layout="half", norm="rmsnorm", ffn="swiglu", attn=attn, n_kv_heads=n_kv)
    dec_i = rand_params(build_decoder(arch_i), seed=7)
    dec_h = build_decoder(arch_h)
    hd = arch_i.head_dim
    perms = {
        "q": _interleaved_to_half_perm(arch_i.model.n_heads, hd),
        "k": _interleaved_to_half_perm(arch_i.n_kv_heads, hd),
    }
    state = {}
    for name, tensor in dec_i.state_dict().items():
        parts = name.split(".")
        if len(parts) >= 3 and parts[-3] == "attn" and parts[-2] in perms:
            tensor = tensor[perms[parts[-2]]]
        state[name] = tensor
    assert any(".attn.q.bias" in n for n in state)  # biases are permuted too
    dec_h.load_state_dict(state)
    x = _x((2, 11, arch_i.model.d_model), seed=8)
    out_i, out_h = dec_i(x), dec_h(x)
    torch.testing.assert_close(out_h, out_i, atol=1e-5, rtol=1e-5)
    # Without the permutation the two layouts disagree.
    dec_h.load_state_dict(dec_i.state_dict())
    assert (dec_h(x) - out_i).abs().max() > 1e-2


def test_learned_positions_embed_adds_table_rows(make_arch, rand_params):
    arch = make_arch(pos="learned")
    pos = rand_params(LearnedPositions(arch), seed=9)
    x = _x((2, 6, arch.model.d_model), seed=10)
    for offset in (0, 5, arch.model.max_seq_len - 6):
        torch.testing.assert_close(pos.embed(x, offset), x + pos.table.weight[offset : offset + 6], atol=0, rtol=0)
    assert pos.rotation(6, 0) is None


def test_no_positions_is_identity(make_arch):
    pos = NoPositions(make_arch(pos="none"))
    x = _x((2, 6, 32))
    assert torch.equal(pos.embed(x, 3), x)
    assert pos.rotation(6, 3) is None
    assert list(pos.parameters()) == []


def test_decoder_with_learned_positions_equals_blocks_on_x_plus_table(make_arch, rand_params):
    arch = make_arch(pos="learned")
    dec = rand_params(build_decoder(arch), seed=11)
    x = _x((2, 7, arch.model.d_model), seed=12)
    h = x + dec.positions.table.weight[:7]
    for block in dec.blocks:
        h = block(h)
    torch.testing.assert_close(dec(x), dec.norm(h), atol=1e-6, rtol=1e-6)

    # With a cache the table rows start at the cache position: prefill 4, then 3 more at offset 4.
    cache = dec.new_cache(batch_size=2)
    dec(x[:, :4], cache)
    tail = dec(x[:, 4:], cache)
    torch.testing.assert_close(tail, dec(x)[:, 4:], atol=1e-5, rtol=1e-5)


def test_rope_decoder_built_on_meta_then_materialised_matches_cpu(make_arch, rand_params):
    # The RoPE table must not depend on the device the module was constructed on (meta, cuda, ...).
    arch = make_arch(pos="rope", norm="rmsnorm", ffn="swiglu")
    ref = rand_params(build_decoder(arch), seed=13)
    dec = build_decoder(arch, device="meta").to_empty(device="cpu")
    dec.load_state_dict(ref.state_dict())
    x = _x((1, 5, arch.model.d_model), seed=14)
    torch.testing.assert_close(dec(x), ref(x), atol=0, rtol=0)


def test_rope_decoder_runs_under_a_default_device_context(make_arch):
    # ``with torch.device(...)`` (a common way to build and run on an accelerator) must not split the
    # RoPE table computation across devices; on CPU the meta device stands in for the accelerator.
    arch = make_arch(pos="rope")
    with torch.device("meta"):
        dec = build_decoder(arch, device="meta")
        out = dec(torch.empty(1, 5, arch.model.d_model))
    assert out.device.type == "meta"
