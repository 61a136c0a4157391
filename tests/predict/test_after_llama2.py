"""The predictor beyond Llama-2: Mistral-7B's preset, the flips on Llama-2's block (values after Llama-2, named
settings), MLA's latent and a window's rolling cache at full size, and the largest batch on H100 and H200.

Rows must come from the declarations alone: attention declares MLA as a flip and its sliding window as a setting
flip (``components/attention.py``), and the predictor finds both through ``Choice.after_llama2`` and
``Choice.setting_flips``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from ablations.predict.__main__ import load, main
from ablations.predict.after_llama2 import AFTER_LLAMA2_MODELS, at_size
from ablations.predict.full_size_notes import notes
from ablations.predict.full_size_tables import device, memory_table
from ablations.predict.scenarios import full_size_settings, llama2_flips, moved_from, predicted
from ablations.roofline.calls import replica
from ablations.roofline.work import kv_bytes_per_token, kv_cache_bytes, largest_batch, lm_params, mode_work
from blockbench import choice, choices
from components import AttnConfig, ModelConfig, build_lm, count_parameters, new_cache, preset
from components.mla import mla_sizes
from components.presets import MISTRAL_7B_CONFIG

ROOT = Path(__file__).resolve().parents[2]
BF16 = 2


def with_attn(name: str, model: str) -> object:
    arch = preset(model)
    return arch.replace(attn=AttnConfig(name)).validate()


# --- Mistral-7B ------------------------------------------------------------------------------------------------


def test_mistral_preset_is_its_config_json():
    # https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json
    m = preset("mistral-7b")
    assert (m.model.d_model, m.model.n_layers, m.model.n_heads, m.n_kv_heads) == (4096, 32, 32, 8)
    assert (m.ffn_hidden, m.model.vocab_size, m.model.max_seq_len, m.attn.window) == (14336, 32000, 32768, 4096)
    assert (m.pos.name, m.pos.theta, m.norm.name, m.norm.eps) == ("rope", 10000.0, "rmsnorm", 1e-5)
    assert m.ffn.name == "swiglu" and not m.model.tie_embeddings and not m.bias.enabled  # hidden_act silu: SwiGLU
    assert all(declared.has(m, declared.llama2) for declared in choices()
               if declared.in_llama2 and declared.group != "attn")
    assert MISTRAL_7B_CONFIG == "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"


def test_mistral_parameter_count_on_meta():
    lm = build_lm(preset("mistral-7b"), device="meta")
    assert next(lm.parameters()).device.type == "meta"
    # Mistral-7B-v0.1's count (the Hub's 7.24B); by hand: embedding and untied head 2 x 32000 x 4096, per block
    # q/o 2 x 4096^2 + k/v 2 x 4096 x 1024 + SwiGLU 3 x 4096 x 14336 + two norms, 32 blocks, the final norm.
    assert count_parameters(lm) == 7_241_732_096 == (2 * 32000 * 4096 + 32 * (2 * 4096**2 + 2 * 4096 * 1024
                                                                         + 3 * 4096 * 14336 + 2 * 4096) + 4096)


def test_mistral_model_yaml_has_the_preset_sizes_and_cites_config_json():
    cfg = load(["model=mistral_7b"])
    m = preset("mistral-7b").model
    assert {k: cfg.model[k] for k in ("d_model", "n_layers", "n_heads", "max_seq_len", "vocab_size",
                                      "tie_embeddings")} == {
        "d_model": m.d_model, "n_layers": m.n_layers, "n_heads": m.n_heads, "max_seq_len": m.max_seq_len,
        "vocab_size": m.vocab_size, "tie_embeddings": m.tie_embeddings}
    assert cfg.model.gqa_kv_heads == preset("mistral-7b").n_kv_heads
    assert MISTRAL_7B_CONFIG in (ROOT / "conf/model/mistral_7b.yaml").read_text()
    assert MISTRAL_7B_CONFIG in (ROOT / "components/presets.py").read_text()


# --- the attention's own cache ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["llama2-7b", "llama2-70b"])
def test_mla_kv_bytes_per_token_is_the_latent(model):
    mla = with_attn("mla", model)
    layers, heads = mla.model.n_layers, mla.model.n_heads
    assert kv_bytes_per_token(mla, BF16) == layers * (512 + 64) * BF16  # DeepSeek-V2's 512 + 64 at 128 a head
    mha = kv_bytes_per_token(with_attn("mha", model), BF16)
    assert mha == layers * 2 * heads * 128 * BF16
    assert kv_bytes_per_token(mla, BF16) / mha == pytest.approx(576 / (2 * heads * 128))  # 7B: 0.070, 70B: 0.035
    gqa8 = kv_bytes_per_token(preset(model).replace(attn=AttnConfig("gqa", 8)), BF16)
    assert kv_bytes_per_token(mla, BF16) / gqa8 == pytest.approx(576 / 2048)  # 0.28 of GQA-8's K and V
    # Whatever the context, the latent per token: the cache grows linearly.
    assert kv_cache_bytes(mla, 3, 32768, BF16) == 3 * 32768 * kv_bytes_per_token(mla, BF16)


def test_kv_bytes_are_the_attentions_own_cache():
    for arch in (preset("llama2-70b"), preset("mistral-7b"), with_attn("mla", "llama2-7b")):
        cache = new_cache(arch, 2, 5000, dtype=torch.bfloat16, device="meta")
        assert kv_cache_bytes(arch, 2, 5000, BF16) == cache.nbytes
    assert kv_cache_bytes(preset("mistral-7b"), 4, 0, BF16) == 0  # nothing cached (a training step)


def test_window_cache_at_32768_holds_4096_positions():
    mistral = preset("mistral-7b")
    one_position = 32 * 2 * 8 * 128 * BF16  # layers x (K, V) x KV heads x head_dim
    assert kv_bytes_per_token(mistral, BF16) == one_position
    assert kv_cache_bytes(mistral, 1, 32768, BF16) == 4096 * one_position == kv_cache_bytes(mistral, 1, 4096, BF16)
    assert kv_cache_bytes(mistral, 1, 1000, BF16) == 1000 * one_position  # below the window: every position
    assert new_cache(mistral, 1, 32768, device="meta").k.shape[3] == 4096


def test_decode_at_32768_reads_only_the_window():
    mistral = preset("mistral-7b")
    unwindowed = mistral.replace(attn=dataclasses.replace(mistral.attn, window=None))
    at = {ctx: mode_work(mistral, "decode", 1, ctx, BF16) for ctx in (4095, 32768)}
    assert at[32768].kv_read_bytes == at[4095].kv_read_bytes == 4096 * 32 * 2 * 8 * 128 * BF16
    assert mode_work(unwindowed, "decode", 1, 32768, BF16).kv_read_bytes == 32769 * 32 * 2 * 8 * 128 * BF16
    assert at[32768].attention_flops == at[4095].attention_flops  # W keys per query, however long the context


def test_largest_batch_on_h200_beats_h100():
    h100, h200 = device("h100_sxm"), device("h200")
    assert (h100.memory_bytes, h200.memory_bytes) == (80e9, 141e9)
    for arch in (preset("mistral-7b"), with_attn("mla", "llama2-7b"), preset("llama2-7b")):
        for ctx in (4096, 32768):
            small = largest_batch(arch, ctx, BF16, h100.memory_bytes)
            big = largest_batch(arch, ctx, BF16, h200.memory_bytes)
            assert big > small > 0, (ctx, small, big)
            free = h100.memory_bytes - lm_params(arch) * BF16
            assert small == int(free // kv_cache_bytes(arch, 1, ctx, BF16))
    # Mistral's window: the same batch at 32768 as at 4096 (its cache stops at W positions).
    mistral = preset("mistral-7b")
    assert largest_batch(mistral, 32768, BF16, h100.memory_bytes) == largest_batch(mistral, 4096, BF16, 80e9)
    with pytest.raises(ValueError, match="at least one token"):
        largest_batch(mistral, 0, BF16, 80e9)


def test_kernel_count_replica_keeps_mla_and_a_window():
    mla = with_attn("mla", "llama2-70b")
    assert replica(mla, 1).attn.name == "mla" and replica(mla, 1).validate()
    windowed = replica(preset("mistral-7b"), 1)
    assert windowed.attn.window is not None and windowed.validate()


# --- the flips on Llama-2's block ------------------------------------------------------------------------------


def expected_flips() -> list[tuple[str, str]]:
    """(group, value or setting name) of every flip on Llama-2's block, read from the declarations."""
    return [(declared.group, v) for declared in choices() for v in [*declared.after_llama2, *declared.setting_flips]]


def test_every_after_llama2_value_and_setting_flip_is_predicted_against_llama2():
    model = preset("llama2-70b").model
    p = predicted(model, 8, "llama2_70b")
    on_llama2 = [name for name, against in p.against.items() if against == "llama2"]
    llama = p.variants["llama2"]
    found = []
    for name in on_llama2:
        declared, value, settings = moved_from(p.variants[name], llama)
        found.append((declared.group, value if not settings else next(k for k in declared.setting_flips
                                                               if full_size_settings(declared, k)[0] == settings)))
    assert sorted(found) == sorted(expected_flips())
    assert p.against["llama2"] == "gpt2" and all(p.against[n] == "gpt2" for n in p.variants if n not in on_llama2)
    assert ("attn", "mla") in found and ("attn", "window") in found


def test_full_size_window_is_mistrals_and_mla_is_deepseek_v2s():
    attn = choice("attn")
    assert full_size_settings(attn, "window") == ({"window": 4096}, "mistral-7b")
    for name, kv in (("llama2_7b", 32), ("llama2_70b", 8)):
        flipped = llama2_flips(preset(name.replace("_", "-")).model, kv, name)
        mla = next(a for a in flipped.values() if a.attn.name == "mla")
        sizes = mla_sizes(mla.attn, mla.head_dim)
        assert (sizes.kv_lora_rank, sizes.rope_dim, sizes.head_dim) == (512, 64, 128)
        window = next(a for a in flipped.values() if a.attn.window is not None)
        assert window.attn.window == 4096 and window.attn.name == flipped["llama2"].attn.name


def test_mistral_flips_keep_its_window_out_of_every_other_flip():
    p = predicted(preset("mistral-7b").model, 8, "mistral_7b")
    windowed = [n for n, a in p.variants.items() if a.attn.window is not None]
    assert windowed == ["llama2-gqa8-w4096"]  # the window flip alone; with it Llama-2's block is Mistral-7B
    mistral, flip = preset("mistral-7b"), p.variants["llama2-gqa8-w4096"]
    assert (flip.attn, flip.ffn_hidden, flip.model) == (mistral.attn, 14336, mistral.model)
    assert lm_params(flip) == 7_241_732_096


def test_mistral_is_llama2s_block_at_its_sizes_with_its_own_window():
    # Read from the preset (its settings beyond Llama-2's block), whether or not attention declares a window flip.
    s = at_size("mistral_7b")
    assert [r.label for r in s.rows] == ["Llama-2 block (baseline)", "attn.window: none → 4096 (= Mistral-7B)"]
    assert s.rows[1].arch.attn == preset("mistral-7b").attn and s.published_context == s.predicted_context == 32768
    assert any("attn.window=4096" in line and "Mistral-7B's own" in line for line in notes([s]))


def test_cli_predicts_past_max_seq_len_only_when_asked(capsys):
    assert main(["model=llama2_7b", "decode.contexts=[32768]"]) == 2
    err = capsys.readouterr().err
    assert "decode.contexts=32768 exceeds model.max_seq_len=4096" in err and "extend_context=true" in err
    assert main(["model=llama2_7b", "decode.batches=[1]", "decode.contexts=[4096,32768]", "extend_context=true"]) == 0
    out = capsys.readouterr().out
    assert "model.max_seq_len raised from 4,096 to 32,768" in out
    lines = [line.split("|") for line in out.splitlines() if line.startswith("| decode, context 32,768")]
    header = next(line.split("|") for line in out.splitlines() if line.startswith("| scenario"))
    col = {h.strip(): i for i, h in enumerate(header)}
    against = {r[col["variant"]].strip(): r[col["against"]].strip() for r in lines}
    assert against["llama2"] == "gpt2" and against["gpt2"] == "gpt2"
    assert {v for v, a in against.items() if a == "llama2"} == {
        n for n, a in predicted(preset("llama2-7b").model, 32, "llama2_7b").against.items() if a == "llama2"}


def test_full_size_tables_have_every_flip_on_llama2s_block():
    sizes = [at_size(m) for m in AFTER_LLAMA2_MODELS]
    by_model = {s.model: s for s in sizes}
    for model in ("llama2_7b", "llama2_70b"):
        rows = by_model[model].rows
        assert rows[0].choice is None and len(rows) == 1 + len(expected_flips())
        table = by_model[model].table
        assert set(table["against"]) == {"llama2"} and set(table["context"]) == {4096, 32768}
    mistral = by_model["mistral_7b"]
    assert [r.label for r in mistral.rows] == ["Llama-2 block (baseline)",
                                               "attn.window: none → 4096 (= Mistral-7B)"]
    decode = mistral.table[(mistral.table.variant == mistral.rows[1].variant) & (mistral.table.batch == 64)]
    ratio = dict(zip(decode["context"], decode["ratio"], strict=True))
    assert ratio[32768] < 0.5 and ratio[4096] == pytest.approx(1, abs=0.01)  # the window only bites past 4096
    text = "\n".join(notes(sizes))
    assert "counterfactual context" in text and "Mistral-7B's own" in text
    assert "DeepSeek's own models are mixtures of experts, which this harness does not model" in text
    memory = memory_table(sizes)
    assert "GQA → MLA ‡ [mla] | 36 KiB" in memory  # 32 layers x 576 x 2 bytes
    assert "largest batch, h200 (141 GB), 32,768" in memory and "largest batch, h100_sxm (80 GB), 4,096" in memory


def test_full_size_main_marks_everything_predicted(capsys):
    from ablations.predict.full_size import main as full_size_main

    assert full_size_main([]) == 0
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line
               and ("(predicted)" in line)]
    assert len(headers) == 3  # each table's header says its numbers are predicted
    assert "GQA → MLA ‡" in out and "attn.window: none → 4096" in out and "Mistral-7B" in out
    assert "training memory not modelled" in out


def test_custom_sizes_need_no_preset():
    p = predicted(ModelConfig(d_model=64, n_layers=2, n_heads=4, max_seq_len=256, vocab_size=100,
                              tie_embeddings=False), 2, "custom")
    assert sum(a == "llama2" for a in p.against.values()) == len(expected_flips())
