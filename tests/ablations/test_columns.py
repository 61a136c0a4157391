"""How a choice is written to a result row, read back and named (``ablations.config.columns``): attention's KV
heads, window and MLA sizes, RoPE's layout, the biases and the parallel block, each exactly as rows always had them,
and the default for a plain group."""

from __future__ import annotations

from ablations.config.columns import cell, config_from_row, name_in, row_columns, row_values
from ablations.results.row_arch import arch_from_row
from ablations.results.variant_labels import variant_label
from blockbench import choice
from components import ArchConfig, AttnConfig, BiasConfig, ModelConfig, PosConfig
from components.parallel import BlockConfig
from components.presets import llama2_block

D, HEADS = 64, 4  # head_dim 16: by default a latent of 64 and a RoPE key of 8


def mla_arch(**sizes: int) -> ArchConfig:
    return ArchConfig(model=ModelConfig(d_model=D, n_layers=1, n_heads=HEADS, max_seq_len=64),
                      pos=PosConfig("rope", layout="interleaved"), attn=AttnConfig("mla", **sizes)).validate()


def test_mla_names_rows_and_reads_back():
    attn = choice("attn")
    arch = mla_arch()
    assert arch.n_kv_heads == HEADS  # one K and V per head, up-projected: never taken for GQA or MQA
    assert attn.has(arch, "mla") and not attn.has(arch, "mha") and not attn.has(arch, "gqa")
    assert variant_label(arch) == "rope+mla" and attn.shown("mla") == "MLA"
    untied = ModelConfig(d_model=D, n_heads=HEADS, tie_embeddings=False)  # Llama-2's, as its labels expect
    assert variant_label(llama2_block(untied, 2).replace(attn=AttnConfig("mla"))) == "llama2-mla"
    sized = mla_arch(kv_lora_rank=32, q_lora_rank=24)
    assert name_in(attn, sized) == "mla-kv32-q24" and attn.has(sized, "mla")
    for a in (arch, sized):
        row = {**row_values(attn, a), "n_heads": HEADS, "d_model": D}
        assert set(row) - {"n_heads", "d_model"} == set(row_values(attn, ArchConfig()))  # every row, the same columns
        assert config_from_row(attn, row) == a.attn  # defaults read back as defaults
        assert arch_from_row(row).attn == a.attn
    row = {**row_values(attn, sized), "n_heads": HEADS, "d_model": D}
    assert (row["kv_lora_rank"], row["qk_rope_head_dim"], row["q_lora_rank"]) == (32, 8, 24)
    assert cell(attn, row) == "latent 32+8, q 24"
    assert cell(attn, {**row_values(attn, arch), "n_heads": HEADS}) == "latent 64+8"
    # A table reads empty cells back as NaN.
    nan = {**row_values(attn, arch), "q_lora_rank": float("nan"), "window": float("nan"), "n_heads": HEADS,
           "d_model": D}
    assert config_from_row(attn, nan) == AttnConfig("mla")


def test_a_window_is_in_the_row_and_the_label_only_when_set():
    attn = choice("attn")
    plain = ArchConfig(model=ModelConfig(d_model=D, n_heads=HEADS))
    row = row_values(attn, plain)
    assert row == {"attn": "mha", "n_kv_heads": HEADS, "window": None, "kv_lora_rank": None,
                   "qk_rope_head_dim": None, "q_lora_rank": None}
    assert variant_label(plain) == "gpt2" and cell(attn, {**row, "n_heads": HEADS}) == "4 / 4"
    windowed = plain.replace(attn=AttnConfig("mha", window=16))
    assert variant_label(windowed) == "mha-w16" and not attn.has(windowed, "mha")
    row = {**row_values(attn, windowed), "n_heads": HEADS}
    assert row["window"] == 16 and cell(attn, row) == "4 / 4, window 16"
    assert config_from_row(attn, row) == AttnConfig("mha", window=16)
    gqa = llama2_block(ModelConfig(d_model=D, n_heads=HEADS, tie_embeddings=False), kv_heads=2)
    assert variant_label(gqa) == "llama2"
    gqa_windowed = gqa.replace(attn=AttnConfig("gqa", 2, window=16))
    assert variant_label(gqa_windowed) == "llama2-gqa2-w16"
    assert config_from_row(attn, {**row_values(attn, gqa_windowed), "n_heads": HEADS}) == gqa_windowed.attn
    # Sizing GQA keeps its window.
    assert attn.at_size("gqa", 2, window=16) == AttnConfig("gqa", 2, window=16)


def test_the_other_groups_columns_are_as_rows_always_had_them():
    base = ArchConfig()
    assert row_columns()[:3] == ["pos", "norm", "ffn"] and "window" in row_columns() and "block" in row_columns()
    rope = base.replace(pos=PosConfig("rope", layout="interleaved"))
    assert row_values(choice("pos"), rope) == {"pos": "rope-interleaved"}
    assert config_from_row(choice("pos"), {"pos": "rope-interleaved"}) == rope.pos
    nobias = base.replace(bias=BiasConfig("off"))
    assert row_values(choice("bias"), nobias) == {"bias": False} and name_in(choice("bias"), nobias) == "nobias"
    assert [config_from_row(choice("bias"), {"bias": v}).name for v in (False, "True", 1)] == ["off", "on", "on"]
    assert cell(choice("bias"), {"bias": False}) == "off"
    neox = base.replace(block=BlockConfig("parallel", shared_norm=False))
    assert row_values(choice("block"), neox) == {"block": "parallel-2norm"} == {"block": name_in(choice("block"), neox)}
    assert config_from_row(choice("block"), {"block": "parallel-2norm"}) == neox.block
    # The default: the value under the group's name, GPT-2's where a row predates the group, shown as written.
    norm = choice("norm")
    assert row_values(norm, base) == {"norm": "layernorm"} and config_from_row(norm, {}) == norm.config()
    assert cell(norm, {"norm": float("nan")}) == "layernorm" and cell(norm, {"norm": "rmsnorm"}) == "rmsnorm"
    # A row from before a group with columns of its own shows GPT-2's value.
    assert cell(choice("attn"), {"attn": "gqa"}) == "mha"
