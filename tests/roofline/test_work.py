"""The bytes and FLOPs model against counts done by hand for a tiny decoder (d=8, 2 heads of 4, one layer)."""

from __future__ import annotations

import dataclasses

import pytest

from ablations.roofline.work import decoder_params, decoder_work, mode_work
from blockbench import Step
from components import (
    ArchConfig,
    AttnConfig,
    BiasConfig,
    Decoder,
    FFNConfig,
    ModelConfig,
    NormConfig,
    PosConfig,
    build_decoder,
)
from components import count_parameters as torch_count

TINY = ArchConfig(ModelConfig(d_model=8, n_layers=1, n_heads=2, max_seq_len=16), bias=BiasConfig("on"))


def test_forward_by_hand():
    # Matrices: q, k, v, out 8x8 = 256; up 8x32 + down 32x8 = 512. Vectors: biases 8+8+8+8+32+8 = 72,
    # two LayerNorms 2 x 16 = 32. Final norm 16. Learned table: 3 of its 16 rows, 24.
    w = decoder_work(TINY, batch=1, seq=3)
    assert w.weight_bytes == 4 * (768 + 104 + 16 + 24)
    # N = 3: q/k/v read x (72), q out (24), out proj reads 24 writes 24; up reads 24 writes 96, down reads 96
    # writes 24. K/V outputs are the cache writes, counted there.
    assert w.linear_activation_bytes == 4 * (72 + 24 + 48 + 24 + 96 + 96 + 24)
    assert w.attention_activation_bytes == 4 * 48  # Q in, output out: 2 x 3 x 8
    assert w.norm_bytes == 4 * 3 * 2 * 24  # three norms, each reads and writes 3 x 8
    assert w.kv_read_bytes == w.kv_write_bytes == 4 * 2 * 2 * 3 * 4  # K and V, 2 heads, 3 keys of 4
    assert w.bytes == 4 * 1584
    assert w.linear_flops == 2 * 3 * 768
    assert w.attention_flops == 2 * 2 * 2 * 3 * 3 * 4  # QK^T and PV over the full 3 x 3 scores, 2 heads
    assert w.intensity == pytest.approx((4608 + 288) / 6336)


@pytest.mark.parametrize("elem", [2, 4])
def test_the_roofline_prices_the_components_count_and_declares_none_of_its_own(elem):
    """One count: the roofline's work holds ``Decoder.work``'s (components.work.Work) and prices its elements at
    ``elem`` bytes; its FLOPs are that count's."""
    w = decoder_work(TINY, batch=1, seq=3, elem=elem)
    counted = Decoder.work(TINY, Step(1, 3, 3))
    assert w.elements == counted and w.flops == counted.flops and w.executed_flops == counted.executed_flops
    assert (w.weight_bytes, w.norm_bytes, w.kv_read_bytes) == (elem * counted.weights,
                                                               elem * counted.norm_activations, elem * counted.kv_read)
    assert not {f.name for f in dataclasses.fields(w)} & {f.name for f in dataclasses.fields(counted)}


def test_decode_step_by_hand():
    # Context 3: one new token attends to 4 keys; the table contributes its one row.
    w = mode_work(TINY, "decode", batch=1, seq=3)
    assert w.weight_bytes == 4 * (768 + 104 + 16 + 8)
    assert w.linear_activation_bytes == 4 * (24 + 8 + 16 + 8 + 32 + 32 + 8)
    assert w.kv_read_bytes == 4 * 2 * 2 * 4 * 4
    assert w.kv_write_bytes == 4 * 2 * 2 * 1 * 4
    assert w.bytes == 4 * 1168
    assert w.attention_flops == 2 * 2 * 2 * 1 * 4 * 4


def test_gqa_halves_the_cache_and_the_kv_weights():
    gqa = TINY.replace(attn=AttnConfig("gqa", 1))
    mha_w, gqa_w = mode_work(TINY, "decode", 1, 3), mode_work(gqa, "decode", 1, 3)
    assert gqa_w.kv_read_bytes * 2 == mha_w.kv_read_bytes
    assert mha_w.weight_bytes - gqa_w.weight_bytes == 4 * (2 * 8 * 4 + 2 * 4)  # k, v lose 4 rows and 4 biases
    assert gqa_w.attention_flops == mha_w.attention_flops  # every query head still attends


def test_train_is_three_forwards_and_prefill_one():
    fwd = decoder_work(TINY, 2, 5)
    assert mode_work(TINY, "train", 2, 5).bytes == 3 * fwd.bytes
    assert mode_work(TINY, "train", 2, 5).tokens == fwd.tokens == 10
    assert mode_work(TINY, "prefill", 2, 5) == fwd
    with pytest.raises(ValueError, match="mode='backward'"):
        mode_work(TINY, "backward", 1, 1)


def test_lm_head_adds_the_head_and_the_embedding_rows():
    untied = TINY.replace(model=dataclasses.replace(TINY.model, vocab_size=10, tie_embeddings=False))
    plain, head = decoder_work(untied, 1, 3), decoder_work(untied, 1, 3, lm_head=True)
    assert head.weight_bytes - plain.weight_bytes == 4 * (10 * 8 + 3 * 8)
    assert head.linear_flops - plain.linear_flops == 2 * 3 * 8 * 10


@pytest.mark.parametrize("pos,norm,ffn,attn,bias", [
    ("learned", "layernorm", "gelu", AttnConfig("mha"), True),
    ("rope", "rmsnorm", "swiglu", AttnConfig("gqa", 2), False),
    ("none", "rmsnorm", "gelu", AttnConfig("mqa"), True),
    ("rope", "layernorm", "swiglu", AttnConfig("gqa", 2), True),
])
def test_parameter_count_matches_torch(pos, norm, ffn, attn, bias):
    arch = ArchConfig(ModelConfig(d_model=32, n_layers=3, n_heads=4, max_seq_len=20), pos=PosConfig(pos),
                     norm=NormConfig(norm), ffn=FFNConfig(ffn), attn=attn, bias=BiasConfig("on" if bias else "off"))
    assert decoder_params(arch) == torch_count(build_decoder(arch, device="meta"))
