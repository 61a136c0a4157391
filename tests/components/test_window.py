"""Sliding-window attention (``attn.window=W``, Mistral 7B) and its rolling KV cache.

Against a written-out fp64 reference (an explicit masked softmax: query i sees key j iff i - W < j <= i, its own key
included) for MHA, GQA and MQA, with RoPE and with ALiBi: a prefill longer than W, chunks after a prefix and
single-token decode through ``RollingKVCache`` past W positions; the cache's constant memory, its rewind, and the
work counted. Parity with Hugging Face's ``MistralAttention`` and ``MistralModel`` (skipped without transformers):
HF's window is the same W keys, the query's own included (``kv_idx > q_idx - sliding_window``).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from blockbench import Step
from components import AttnConfig, CausalSelfAttention, KVCache, RotaryPositions, build_decoder, kernels, new_cache
from components.kernels import causal_mask
from components.kv_cache import RollingKVCache
from components.model import Decoder
from components.positions import ALiBiPositions

ATTN = [("mha", None), ("gqa", 2), ("mqa", None)]
SEQ = 20
# A prefill longer than every window tested, a chunk after it, a chunk shorter than the window, then single tokens.
STEPS = [(0, 7), (7, 12), (12, 14), *((i, i + 1) for i in range(14, SEQ))]


def _x(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _arch(make_arch, attn, n_kv, window, pos="rope", **kw):
    arch = make_arch(pos=pos, attn=attn, n_kv_heads=n_kv, n_heads=8, d_model=64, n_layers=1, **kw)
    return arch.replace(attn=AttnConfig(attn, n_kv, window=window)).validate()


def window_reference(layer, x, window, rotation=None, slopes=None):
    """The layer in fp64 on the whole sequence: softmax(q k^T / sqrt(d) [- m_h (i - j)]) v with key j masked unless
    i - window < j <= i, then ``out``. Query head i reads KV head i // (n_heads // n_kv_heads); RoPE rotates halves."""
    b, t, _ = x.shape
    nh, nkv, hd = layer.n_heads, layer.n_kv_heads, layer.head_dim

    def heads(m, n):
        return F.linear(x.double(), m.weight.double(), None if m.bias is None else m.bias.double()).view(
            b, t, n, hd).transpose(1, 2)

    q, k, v = heads(layer.q, nh), heads(layer.k, nkv), heads(layer.v, nkv)
    if rotation is not None:
        cos, sin = rotation.cos.double(), rotation.sin.double()

        def rotate(z):
            first, second = z[..., : hd // 2], z[..., hd // 2 :]
            return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)

        q, k = rotate(q), rotate(k)
    kv_of_head = torch.arange(nh) // (nh // nkv)
    k, v = k[:, kv_of_head], v[:, kv_of_head]
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    if slopes is not None:
        scores = scores - slopes.double()[:, None, None] * (i - j)
    scores = scores.masked_fill((j > i) | (j <= i - window), float("-inf"))
    y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, nh * hd)
    return F.linear(y, layer.out.weight.double(), None if layer.out.bias is None else layer.out.bias.double())


def _setup(make_arch, rand_params, attn, n_kv, window, pos, seed):
    arch = _arch(make_arch, attn, n_kv, window, pos=pos)
    layer = rand_params(CausalSelfAttention(arch), seed=seed, scale=2.0)
    rope = RotaryPositions(arch) if pos == "rope" else None
    alibi = ALiBiPositions(arch) if pos == "alibi" else None
    return arch, layer, rope, alibi


def _step(layer, rope, alibi, chunk, start, cache):
    rotation = rope.rotation(chunk.shape[1], start) if rope is not None else None
    return layer(chunk, rotation, cache, alibi.score_bias() if alibi is not None else None)


def _through_cache(layer, rope, alibi, x, cache, steps=STEPS):
    parts = []
    for a, b in steps:
        parts.append(_step(layer, rope, alibi, x[:, a:b], a, cache))
        cache.pos = b
    return torch.cat(parts, dim=1)


@pytest.mark.parametrize("attn,n_kv", ATTN)
@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
@pytest.mark.parametrize("window", [1, 3, 5, SEQ])
def test_prefill_matches_fp64_reference(make_arch, rand_params, attn, n_kv, pos, window):
    _, layer, rope, alibi = _setup(make_arch, rand_params, attn, n_kv, window, pos, seed=1)
    assert layer.window == window
    x = _x((2, SEQ, 64), seed=2)
    slopes = alibi.slopes if alibi is not None else None
    rotation = rope.rotation(SEQ) if rope is not None else None
    want = window_reference(layer, x, window, rotation, slopes)
    got = _step(layer, rope, alibi, x, 0, None)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)
    # The test can tell a window one key longer (for a window at least the sequence, no window at all).
    other = window_reference(layer, x, window + 1 if window < SEQ else 1, rotation, slopes)
    assert (other - want).abs().max() > 1e-3


@pytest.mark.parametrize("attn,n_kv", ATTN)
@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
@pytest.mark.parametrize("window", [1, 3, 4, 6])
def test_rolling_cache_prefill_chunks_and_decode_match_reference(make_arch, rand_params, attn, n_kv, pos, window):
    """A prefill of 7 > W, chunks of 5 and 2 after it, then single tokens past many windows: through a cache of W
    slots, the same rows as the full-sequence forward and the fp64 reference."""
    arch, layer, rope, alibi = _setup(make_arch, rand_params, attn, n_kv, window, pos, seed=3)
    x = _x((2, SEQ, 64), seed=4)
    cache = CausalSelfAttention.new_cache(arch, batch_size=2, max_seq_len=SEQ)
    assert isinstance(cache, RollingKVCache) and cache.k.shape == (1, 2, layer.n_kv_heads, window, 8)
    got = _through_cache(layer, rope, alibi, x, cache)
    want = window_reference(layer, x, window, rope.rotation(SEQ) if rope else None, alibi.slopes if alibi else None)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got, _step(layer, rope, alibi, x, 0, None), atol=1e-5, rtol=1e-5)


def test_alibi_bias_follows_the_slots(make_arch, rand_params, monkeypatch):
    """Decode attends over the slots as they lie; ALiBi's bias must be rolled with them. Without the roll the
    rows after the cache wraps are wrong (and the ones before it are not, where slots are still in order)."""
    arch, layer, _, alibi = _setup(make_arch, rand_params, "gqa", 2, 4, "alibi", seed=5)
    x = _x((2, SEQ, 64), seed=6)
    steps = [(i, i + 1) for i in range(SEQ)]
    right = _through_cache(layer, None, alibi, x, CausalSelfAttention.new_cache(arch, 2, SEQ), steps)
    monkeypatch.setattr(RollingKVCache, "keys_rolled", lambda self, t, s: 0)
    wrong = _through_cache(layer, None, alibi, x, CausalSelfAttention.new_cache(arch, 2, SEQ), steps)
    assert torch.equal(wrong[:, :4], right[:, :4])
    assert (wrong[:, 4:] - right[:, 4:]).abs().max() > 1e-3


@pytest.mark.parametrize("llama_like", [False, True], ids=["gpt2-block", "llama2-block"])
@pytest.mark.parametrize("attn,n_kv", ATTN)
@torch.no_grad()
def test_decoder_full_forward_equals_token_by_token_rolling_decode(make_arch, rand_params, llama_like, attn, n_kv):
    if llama_like:
        arch = make_arch(pos="rope", norm="rmsnorm", ffn="swiglu", bias=False, attn=attn, n_kv_heads=n_kv)
    else:
        arch = make_arch(pos="learned", attn=attn, n_kv_heads=n_kv)
    arch = arch.replace(attn=AttnConfig(attn, n_kv, window=3))
    dec = rand_params(build_decoder(arch), seed=7)
    x = _x((2, 11, arch.model.d_model), seed=8)
    full = dec(x)
    cache = dec.new_cache(batch_size=2)
    assert isinstance(cache, RollingKVCache) and cache.max_seq_len == arch.model.max_seq_len
    steps = [dec(x[:, :5], cache)] + [dec(x[:, i : i + 1], cache) for i in range(5, 11)]
    assert cache.pos == 11
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    # The window matters at this level too.
    plain = build_decoder(arch.replace(attn=AttnConfig(attn, n_kv)))
    plain.load_state_dict(dec.state_dict())
    assert (plain(x) - full).abs().max() > 1e-3


@pytest.mark.parametrize("attn,n_kv", ATTN)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rolling_cache_memory_is_window_positions_however_long_the_context(make_arch, attn, n_kv, dtype):
    w, layers, batch = 6, 3, 2
    arch = make_arch(pos="rope", attn=attn, n_kv_heads=n_kv, n_layers=layers, max_seq_len=64)
    arch = arch.replace(attn=AttnConfig(attn, n_kv, window=w))
    kv, hd, elem = arch.n_kv_heads, arch.head_dim, torch.empty((), dtype=dtype).element_size()
    short, long = new_cache(arch, batch, w, dtype=dtype), new_cache(arch, batch, 4 * w, dtype=dtype)
    assert isinstance(long, RollingKVCache) and long.max_seq_len == 4 * w and short.max_seq_len == w
    assert long.nbytes == short.nbytes == 2 * layers * batch * kv * w * hd * elem
    assert long.k.shape == long.v.shape == (layers, batch, kv, w, hd) and long.k.dtype == dtype
    assert long.bytes_per_token() == 2 * layers * batch * kv * hd * elem
    assert long.nbytes == w * long.bytes_per_token()
    # A cache for fewer positions than the window holds only those; without a window the cache is the plain one.
    assert new_cache(arch, batch, 2, dtype=dtype).nbytes == 2 * long.bytes_per_token()
    plain = new_cache(arch.replace(attn=AttnConfig(attn, n_kv)), batch, 4 * w, dtype=dtype)
    assert type(plain) is KVCache and plain.nbytes == 4 * long.nbytes


def test_rolling_cache_counts_positions_to_max_seq_len_and_refuses_past_it():
    cache = RollingKVCache(1, 1, 1, 10, 2, window=3)
    for p in range(10):
        cache.pos = p
        ks, vs = cache.update(0, _x((1, 1, 1, 2), p), _x((1, 1, 1, 2), 100 + p))
        assert ks.shape[2] == vs.shape[2] == min(p + 1, 3)
    # Slot p % 3 holds position p: positions 9, 7, 8 after ten tokens.
    for slot, p in enumerate((9, 7, 8)):
        assert torch.equal(cache.k[0, :, :, slot], _x((1, 1, 1, 2), p)[:, :, 0])
    cache.pos = 10
    with pytest.raises(ValueError, match="KV cache holds 10"):
        cache.update(0, _x((1, 1, 1, 2)), _x((1, 1, 1, 2)))
    cache.pos = 8
    with pytest.raises(ValueError, match="KV cache holds 10"):
        cache.update(0, _x((1, 1, 3, 2)), _x((1, 1, 3, 2)))


def test_rolling_cache_chunk_returns_the_window_in_position_order_and_keeps_the_last():
    cache = RollingKVCache(1, 1, 1, 20, 1, window=4)
    keys = torch.arange(20, dtype=torch.float32).view(1, 1, 20, 1)  # key p holds the value p
    cache.update(0, keys[:, :, :6], keys[:, :, :6])
    cache.pos = 6
    ks, _ = cache.update(0, keys[:, :, 6:9], keys[:, :, 6:9])
    assert ks.flatten().tolist() == [3, 4, 5, 6, 7, 8]  # the first new query's 3 earlier keys, then the chunk
    assert sorted(cache.k.flatten().tolist()) == [5, 6, 7, 8]
    cache.pos = 9
    ks, _ = cache.update(0, keys[:, :, 9:10], keys[:, :, 9:10])
    assert ks.flatten().tolist() == [8, 9, 6, 7]  # slot order: position 9 in slot 1
    assert cache.keys_rolled(1, 4) == 2
    assert ks.flatten().roll(-cache.keys_rolled(1, 4)).tolist() == [6, 7, 8, 9]


@pytest.mark.parametrize("attn,n_kv", ATTN)
@torch.no_grad()
def test_rewind_repeats_the_same_decode_step(make_arch, rand_params, attn, n_kv):
    """As the timing code does: a cache at a fixed context, rewound before every call, gives the same step each
    time, both after a real prefill and with random contents (``randomize_``)."""
    arch = make_arch(pos="rope", norm="rmsnorm", ffn="swiglu", bias=False, attn=attn, n_kv_heads=n_kv)
    arch = arch.replace(attn=AttnConfig(attn, n_kv, window=4))
    dec = rand_params(build_decoder(arch), seed=9)
    x = _x((2, 11, arch.model.d_model), seed=10)
    context = 10
    full = dec(x)
    cache = dec.new_cache(2, context + 1)
    dec(x[:, :context], cache)
    outs = []
    for _ in range(3):
        cache.pos = context
        outs.append(dec(x[:, context:], cache))
    assert cache.pos == context + 1
    torch.testing.assert_close(outs[0], full[:, context:], atol=1e-5, rtol=1e-5)
    assert all(torch.equal(o, outs[0]) for o in outs)
    # A copy decodes the same step and leaves the original alone.
    twin = cache.clone()
    twin.pos = cache.pos = context
    assert torch.equal(dec(x[:, context:], twin), outs[0])
    assert twin.k.data_ptr() != cache.k.data_ptr()
    random = dec.new_cache(2, context + 1)
    random.randomize_()
    steps = []
    for _ in range(2):
        random.pos = context
        steps.append(dec(x[:, context:], random))
    assert torch.equal(steps[0], steps[1])
    # Prefill again from 0 (the prefill timing): the same rows as the first time.
    cache.pos = 0
    torch.testing.assert_close(dec(x[:, :context], cache), full[:, :context], atol=1e-5, rtol=1e-5)


def _work_arch(make_arch, window, attn="gqa", n_kv=2):
    arch = make_arch(pos="rope", attn=attn, n_kv_heads=n_kv, n_heads=8, d_model=64)
    return arch.replace(attn=AttnConfig(attn, n_kv, window=window))


@pytest.mark.parametrize("step", [Step(2, 1, 3), Step(2, 1, 40), Step(3, 16, 16), Step(1, 50, 50), Step(2, 5, 30)])
def test_work_counts_only_the_keys_the_window_lets_a_query_see(make_arch, step):
    w = 8
    ours, plain = CausalSelfAttention.work(_work_arch(make_arch, w), step), CausalSelfAttention.work(
        _work_arch(make_arch, None), step)
    h, kv, hd = 8, 2, 8
    held = min(step.keys, step.seq + w - 1)  # every key some query of the step sees
    assert ours.attention_flops == 4 * step.batch * h * step.seq * min(step.keys, w) * hd
    assert ours.kv_read == 2 * step.batch * kv * held * hd
    # The dense masked kernel scores every held key a query: the design's keys plus the ones its mask hides.
    assert ours.executed_flops - ours.linear_flops == 4 * step.batch * h * step.seq * held * hd
    assert (ours.masked_flops > 0) == (step.seq > 1 and step.keys > w)  # a decode step reads only what it sees
    # Everything else is the attention without a window: projections, cache writes, Q read and output written.
    assert dataclasses.replace(ours, attention_flops=plain.attention_flops, kv_read=plain.kv_read,
                               masked_flops=0) == plain
    # A window at least as long as the context counts exactly as none.
    assert CausalSelfAttention.work(_work_arch(make_arch, step.keys), step) == plain


@pytest.mark.parametrize("context", [2, 7, 30])
@torch.no_grad()
def test_decode_work_is_what_the_rolling_cache_reads_and_what_is_counted(make_arch, rand_params, context):
    """The cache read a decode step states is the K/V the rolling cache hands attention, and its FLOPs are what
    ``FlopCounterMode`` counts (math SDPA, as ``ablations.measure.flops`` counts)."""
    arch = _work_arch(make_arch, 8)
    cache = CausalSelfAttention.new_cache(arch, 2, context + 1, n_layers=1)
    cache.randomize_()
    cache.pos = context
    ks, vs = cache.update(0, _x((2, 2, 1, 8)), _x((2, 2, 1, 8)))
    work = CausalSelfAttention.work(arch, Step(2, 1, context + 1))
    assert work.kv_read == ks.numel() + vs.numel()
    dec = rand_params(build_decoder(arch), seed=12)
    dec_cache = dec.new_cache(2, context + 1)
    dec_cache.randomize_()
    dec_cache.pos = context
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        dec(_x((2, 1, 64)), dec_cache)
    assert counter.get_total_flops() == Decoder.work(arch, Step(2, 1, context + 1)).flops


@pytest.mark.parametrize("steps", [[(0, 30)], [(0, 6)], [(0, 20), (20, 30)], [(0, 9), (9, 12)]])
@torch.no_grad()
def test_prefill_counts_the_designs_keys_and_executes_every_held_one(make_arch, rand_params, steps):
    """A windowed prefill (whole, or in chunks through the rolling cache): ``FlopCounterMode`` (math SDPA, as
    ``ablations.measure.flops`` counts) sees what the dense masked kernel computes, the executed count; the
    design's count is less exactly where the window hid keys from some query."""
    w = 8
    arch = _work_arch(make_arch, w)
    dec = rand_params(build_decoder(arch), seed=14)
    cache = dec.new_cache(2, steps[-1][1])
    for start, end in steps:
        step = Step(2, end - start, end)
        with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
            dec(_x((2, end - start, 64), seed=start), cache)
        work = Decoder.work(arch, step)
        assert counter.get_total_flops() == work.executed_flops
        hidden = step.seq > 1 and step.keys > w
        assert (work.flops < work.executed_flops) == hidden
        # The design's attention FLOPs are the executed ones at min(keys, W) keys a query.
        assert work.attention_flops * min(step.keys, step.seq + w - 1) == (
            work.attention_flops + work.masked_flops) * min(step.keys, w)


def test_only_a_window_that_drops_keys_takes_the_masked_path(make_arch, rand_params, monkeypatch):
    """Where every key is within the window (a short prefill, any decode step through the rolling cache) the plain
    causal paths run; a mask is built only where some query loses a key to the window."""
    arch = _work_arch(make_arch, 4)
    layer = rand_params(CausalSelfAttention(arch), seed=13)
    taken = []
    masked = kernels.masked_sdpa
    monkeypatch.setattr(kernels, "masked_sdpa", lambda *a: taken.append("masked") or masked(*a))
    layer(_x((1, 4, 64)))
    assert taken == []
    layer(_x((1, 5, 64)))
    assert taken == ["masked"]
    taken.clear()
    cache = CausalSelfAttention.new_cache(arch, 1, 20, n_layers=1)
    for p in range(9):
        layer(_x((1, 1, 64), p), None, cache)
        cache.pos += 1
    assert taken == []


def test_bottom_right_window_mask_keeps_own_key_and_the_previous_window_minus_one():
    seen = causal_mask(3, 6, torch.device("cpu"), window=2)
    # Queries at positions 3, 4, 5 over keys 0..5: each sees itself and the key before it.
    assert seen.int().tolist() == [[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1]]


# --- Hugging Face Mistral ------------------------------------------------------------------------------------------


@pytest.fixture
def hf():
    """transformers and its Mistral modules, or a skip."""
    transformers = pytest.importorskip("transformers")
    from transformers import masking_utils
    from transformers.models.mistral import modeling_mistral

    return transformers, modeling_mistral, masking_utils


HF_SEQ, HF_PREFILL, HF_WINDOW = 13, 5, 4


def mistral_config(transformers, arch):
    return transformers.MistralConfig(
        hidden_size=arch.model.d_model, intermediate_size=arch.ffn_hidden, num_hidden_layers=arch.model.n_layers,
        num_attention_heads=arch.model.n_heads, num_key_value_heads=arch.n_kv_heads, head_dim=arch.head_dim,
        sliding_window=arch.attn.window, rms_norm_eps=arch.norm.eps, max_position_embeddings=arch.model.max_seq_len,
        rope_parameters={"rope_type": "default", "rope_theta": arch.pos.theta}, hidden_act="silu",
        attention_dropout=0.0, vocab_size=arch.model.vocab_size, attn_implementation="eager",
    )


def _mistral_arch(make_arch, attn, n_kv, window=HF_WINDOW):
    arch = make_arch(pos="rope", norm="rmsnorm", ffn="swiglu", attn=attn, n_kv_heads=n_kv, bias=False, d_model=64,
                   n_heads=8)
    return arch.replace(attn=AttnConfig(attn, n_kv, window=window)).validate()


def _hf_mask(masking_utils, config, x):
    return masking_utils.create_sliding_window_causal_mask(
        config=config, inputs_embeds=x, attention_mask=None, cache=None, position_ids=torch.arange(x.shape[1])[None])


def test_hf_mistral_window_is_our_window(hf, make_arch):
    """HF's sliding mask keeps key j for query i iff i - W < j <= i: W keys, the query's own included, as ours.

    (Mistral's original one-file reference bands its prefill mask with ``triu(diagonal=-sliding_window)``, which keeps
    one key more, while its W-slot rolling cache gives a decode step W keys; HF's convention is the one a W-slot
    cache gives in prefill and decode alike, and the one matched here.)
    """
    transformers, _, masking_utils = hf
    arch = _mistral_arch(make_arch, "gqa", 2)
    mask = _hf_mask(masking_utils, mistral_config(transformers, arch), torch.zeros(1, HF_SEQ, 64))
    seen = mask[0, 0] == 0
    assert torch.equal(seen, causal_mask(HF_SEQ, HF_SEQ, torch.device("cpu"), HF_WINDOW))
    assert seen.sum(dim=1).max() == HF_WINDOW


@pytest.mark.parametrize("attn,n_kv", ATTN)
@torch.no_grad()
def test_window_attention_and_rolling_decode_match_hf_mistral_attention(hf, make_arch, rand_params, attn, n_kv):
    """HF's ``MistralAttention`` with its own sliding mask and rotary table, our weights copied in: our full forward,
    and our prefill of 5 > W tokens then one token at a time through the rolling cache, give HF's rows."""
    transformers, modeling_mistral, masking_utils = hf
    arch = _mistral_arch(make_arch, attn, n_kv)
    config = mistral_config(transformers, arch)
    ours = rand_params(CausalSelfAttention(arch), seed=14, scale=2.0).eval()
    theirs = modeling_mistral.MistralAttention(config, layer_idx=0).eval()
    theirs.load_state_dict({"q_proj.weight": ours.q.weight, "k_proj.weight": ours.k.weight,
                            "v_proj.weight": ours.v.weight, "o_proj.weight": ours.out.weight})
    x = _x((2, HF_SEQ, 64), seed=15)
    position_embeddings = modeling_mistral.MistralRotaryEmbedding(config)(x, torch.arange(HF_SEQ)[None])
    want, _ = theirs(x, position_embeddings=position_embeddings, attention_mask=_hf_mask(masking_utils, config, x))
    rope = RotaryPositions(arch)
    # Measured max |diff| up to 3.8e-6 (full sequence) and 4.8e-6 (rolling decode), outputs up to 15.
    torch.testing.assert_close(ours(x, rope.rotation(HF_SEQ)), want, atol=1e-5, rtol=1e-5)
    cache = CausalSelfAttention.new_cache(arch, 2, HF_SEQ, n_layers=1)
    steps = [(0, HF_PREFILL), *((i, i + 1) for i in range(HF_PREFILL, HF_SEQ))]
    got = _through_cache(ours, rope, None, x, cache, steps)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # A window one key shorter or longer than HF's, or none, is caught.
    for window in (HF_WINDOW - 1, HF_WINDOW + 1, None):
        ours.window = window
        assert (ours(x, rope.rotation(HF_SEQ)) - want).abs().max() > 1e-3


@torch.no_grad()
def test_window_decoder_and_rolling_decode_match_hf_mistral_model(hf, make_arch, rand_params):
    """Two Mistral layers and the final norm: ``MistralModel`` fed ``inputs_embeds`` builds its own sliding mask and
    rotary table; our Decoder's full forward and its decode through the rolling cache give its rows."""
    transformers, modeling_mistral, _ = hf
    arch = _mistral_arch(make_arch, "gqa", 2)
    ours = rand_params(build_decoder(arch), seed=16, scale=2.0).eval()
    theirs = modeling_mistral.MistralModel(mistral_config(transformers, arch)).eval()
    names = {"input_layernorm": "norm1", "self_attn.q_proj": "attn.q", "self_attn.k_proj": "attn.k",
             "self_attn.v_proj": "attn.v", "self_attn.o_proj": "attn.out", "post_attention_layernorm": "norm2",
             "mlp.gate_proj": "ffn.gate", "mlp.up_proj": "ffn.up", "mlp.down_proj": "ffn.down"}
    src = ours.state_dict()
    state = {f"layers.{i}.{t}.weight": src[f"blocks.{i}.{m}.weight"] for i in range(2) for t, m in names.items()}
    state["norm.weight"] = src["norm.weight"]
    missing, unexpected = theirs.load_state_dict(state, strict=False)
    assert missing == ["embed_tokens.weight"] and unexpected == []
    x = _x((2, HF_SEQ, 64), seed=17)
    want = theirs(inputs_embeds=x, use_cache=False).last_hidden_state
    # Measured max |diff| 2.6e-6 (full sequence) and 4.2e-6 (rolling decode), outputs up to 3.1.
    torch.testing.assert_close(ours(x), want, atol=1e-5, rtol=1e-5)
    cache = ours.new_cache(2, HF_SEQ)
    assert isinstance(cache, RollingKVCache)
    rows = [ours(x[:, :HF_PREFILL], cache)] + [ours(x[:, i : i + 1], cache) for i in range(HF_PREFILL, HF_SEQ)]
    torch.testing.assert_close(torch.cat(rows, dim=1), want, atol=1e-5, rtol=1e-5)
    # HF without its window gives other rows.
    theirs.config.sliding_window = None
    assert (theirs(inputs_embeds=x, use_cache=False).last_hidden_state - want).abs().max() > 1e-3
