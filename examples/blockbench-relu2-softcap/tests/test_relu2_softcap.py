"""The plugin's two choices: each against a written-out float64 reference, the soft cap also against Hugging Face's
``Gemma2Attention``, and both through every consumer blockbench has (``blockbench.testing.check_choice``)."""

from __future__ import annotations

import math

import pytest
import torch
from blockbench_relu2_softcap.softcap import SoftCapConfig

from blockbench import ArchConfig, ConfigError
from blockbench.testing import arch_with, check_choice
from components import CausalSelfAttention, KVCache, build_decoder

D, HEADS, SEQ = 32, 4, 12


def randn(*shape: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_relu2_is_down_of_squared_relu_of_up():
    arch = arch_with(ffn="relu2")
    ffn = build_decoder(arch).blocks[0].ffn.double()
    x = randn(2, 5, D, seed=1)
    up_w, down_w = ffn.up.weight, ffn.down.weight
    hidden = x @ up_w.T + ffn.up.bias
    want = (torch.where(hidden > 0, hidden, torch.zeros_like(hidden)) ** 2) @ down_w.T + ffn.down.bias
    torch.testing.assert_close(ffn(x), want, rtol=1e-12, atol=1e-12)
    assert arch.ffn_hidden == 4 * D  # GPT-2's width: two matrices, not a gated FFN's three
    with pytest.raises(AssertionError):  # a plain ReLU would be caught
        torch.testing.assert_close(ffn(x), torch.relu(hidden) @ down_w.T + ffn.down.bias)


def reference_attention(attn: CausalSelfAttention, x: torch.Tensor, cap: float | None) -> torch.Tensor:
    """Written out per head in float64: scaled scores, the cap, the causal mask, softmax, values, output."""
    b, t, _ = x.shape
    hd, heads, kv = attn.head_dim, attn.n_heads, attn.n_kv_heads
    q = (x @ attn.q.weight.T + attn.q.bias).view(b, t, heads, hd)
    k = (x @ attn.k.weight.T + attn.k.bias).view(b, t, kv, hd)
    v = (x @ attn.v.weight.T + attn.v.bias).view(b, t, kv, hd)
    out = torch.empty(b, t, heads, hd, dtype=x.dtype)
    for h in range(heads):
        g = h // (heads // kv)  # the KV head query head h reads
        scores = q[:, :, h] @ k[:, :, g].transpose(1, 2) / math.sqrt(hd)
        if cap is not None:
            scores = cap * torch.tanh(scores / cap)
        scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
        out[:, :, h] = torch.softmax(scores, dim=-1) @ v[:, :, g]
    return out.reshape(b, t, heads * hd) @ attn.out.weight.T + attn.out.bias


@pytest.mark.parametrize("attn", ["mha", "gqa"])
def test_softcap_attention_matches_the_written_out_reference(attn):
    arch = arch_with(softcap="on", attn=attn, pos="none")
    layer = build_decoder(arch).blocks[0].attn.double()
    # Large inputs, so scores reach the cap's nonlinear range: without the cap the result differs.
    x = randn(2, SEQ, D, seed=2, scale=40.0)
    got = layer(x)
    torch.testing.assert_close(got, reference_attention(layer, x, 50.0), rtol=1e-10, atol=1e-10)
    assert (got - reference_attention(layer, x, None)).abs().max() > 1e-3
    # Decoding through the KV cache (a prefill of 5, then one token at a time) gives the same rows.
    cache = KVCache(1, 2, layer.n_kv_heads, SEQ, layer.head_dim, dtype=torch.float64)
    rows = []
    for start, end in [(0, 5), *((i, i + 1) for i in range(5, SEQ))]:
        rows.append(layer(x[:, start:end], cache=cache))
        cache.pos += end - start
    torch.testing.assert_close(torch.cat(rows, dim=1), got, rtol=1e-10, atol=1e-10)


def test_softcap_matches_gemma2_attention():
    transformers = pytest.importorskip("transformers")
    from transformers.models.gemma2 import modeling_gemma2

    config = transformers.Gemma2Config(
        hidden_size=D, num_attention_heads=HEADS, num_key_value_heads=2, head_dim=D // HEADS,
        query_pre_attn_scalar=D // HEADS, attention_bias=False, attn_logit_softcapping=50.0, attention_dropout=0.0,
        layer_types=["full_attention"], num_hidden_layers=1, vocab_size=16)
    config._attn_implementation = "eager"
    hf = modeling_gemma2.Gemma2Attention(config, layer_idx=0).eval()
    ours = build_decoder(arch_with(softcap="on", attn="gqa", pos="none", bias="off")).blocks[0].attn.eval()
    with torch.no_grad():
        for theirs, mine in {"q_proj": ours.q, "k_proj": ours.k, "v_proj": ours.v, "o_proj": ours.out}.items():
            getattr(hf, theirs).weight.copy_(mine.weight)
        x = randn(2, SEQ, D, seed=3, scale=40.0).float()
        # No rotation on either side (pos=none here; cos 1 and sin 0 there), so the comparison is the cap alone.
        identity = (torch.ones(1, SEQ, D // HEADS), torch.zeros(1, SEQ, D // HEADS))
        mask = torch.zeros(1, 1, SEQ, SEQ).masked_fill(~torch.ones(SEQ, SEQ, dtype=torch.bool).tril(),
                                                        torch.finfo(torch.float32).min)
        want, _ = hf(x, position_embeddings=identity, attention_mask=mask)
        torch.testing.assert_close(ours(x), want, rtol=1e-5, atol=1e-5)
        hf.attn_logit_softcapping = None  # without the cap the two differ: the comparison sees the cap
        uncapped, _ = hf(x, position_embeddings=identity, attention_mask=mask)
        assert (ours(x) - uncapped).abs().max() > 1e-3


def test_softcap_off_builds_nothing_and_keeps_the_block():
    torch.manual_seed(0)
    plain = build_decoder(arch_with()).state_dict()
    torch.manual_seed(0)
    off = build_decoder(arch_with(softcap="off")).state_dict()
    assert plain.keys() == off.keys() and all(torch.equal(plain[k], off[k]) for k in plain)
    assert "scores" not in build_decoder(arch_with()).blocks[0].attn._modules


def test_a_bad_cap_is_one_line_naming_the_key():
    with pytest.raises(ConfigError, match=r"^softcap.cap=0 must be a number > 0$"):
        ArchConfig(softcap=SoftCapConfig("on", cap=0)).validate()


def test_relu2_takes_every_consumer():
    check_choice("ffn", ["relu2"])


def test_softcap_takes_every_consumer():
    check_choice("softcap")
