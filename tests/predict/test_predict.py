"""python -m ablations.predict: Hydra groups, one-line errors, and the table's numbers."""

from __future__ import annotations

import pytest

from ablations.predict.__main__ import main, options
from ablations.predict.scenarios import flips
from ablations.roofline.work import kv_cache_bytes, largest_batch, lm_params
from blockbench import choices
from components import ModelConfig, count_parameters, preset
from components import build_lm as torch_lm


def test_hardware_group_has_the_datasheet_machines_with_sources():
    assert {"a100_80gb_sxm", "h100_sxm", "h200"} <= set(options("hardware"))


@pytest.mark.parametrize("args,allowed", [
    (["hardware=h1000"], "allowed: a100_80gb_sxm, h100_sxm, h200"),
    (["model=llama3_8b"], "allowed: gpt2, gpt2_large"),
    (["model=gpt2"], "prefill.tokens=4096 exceeds model.max_seq_len=1024; allowed: 1..1024"),
    (["nope=1"], "Could not override 'nope'"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, allowed):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("blockbench predict: error: ") and allowed in err and err.count("\n") == 1


def test_70b_on_h100_names_its_sources_and_what_bounds_each_scenario(capsys):
    assert main(["hardware=h100_sxm", "model=llama2_70b", "decode.batches=[1]"]) == 0
    out = capsys.readouterr().out
    assert "Predicted (not measured): llama2_70b on h100_sxm" in out
    assert "NVIDIA H100 Tensor Core GPU datasheet" in out and "Databricks 2023" in out
    header = next(line.split("|") for line in out.splitlines() if line.startswith("| scenario"))
    col = {h.strip(): i for i, h in enumerate(header)}
    rows = {(cells[1].strip(), cells[2].strip()): cells for cells in (line.split("|") for line in out.splitlines()
                                                       if line.startswith("| decode"))}
    assert rows[("decode, context 4,096, batch 1", "gqa8")][col["bound"]].strip() == "memory"
    assert rows[("decode, context 4,096, batch 1", "gqa8")][col["KV cache"]].strip() == "1.25 GiB"  # the 8x cut
    assert rows[("decode, context 4,096, batch 1", "gpt2")][col["KV cache"]].strip() == "10 GiB"
    assert rows[("decode, context 4,096, batch 1", "gqa8")][col["against"]].strip() == "gpt2"


def test_flips_move_one_choice_each_at_the_preset_sizes():
    seven = preset("llama2-7b").model
    variants = flips(seven, gqa_kv_heads=32, model_name="llama2_7b")
    names = list(variants)
    assert names[0] == "gpt2" and names[-1] == "llama2"
    # One flip per declared flip value (ALiBi, QK-norm, ... too), GPT-2's five among them in declaration order.
    assert len(names) == 2 + sum(len(choice.flips) for choice in choices())
    assert [n for n in names if n in ("rope", "rmsnorm", "swiglu", "gqa4", "nobias")] == [
        "rope", "rmsnorm", "swiglu", "gqa4", "nobias"]
    assert variants["swiglu"].ffn_hidden == 11008 and variants["gpt2"].ffn_hidden == 4 * 4096
    assert variants["gqa4"].n_kv_heads == 4 and variants["gqa4"].ffn.name == "gelu"  # 70B's group of 8
    llama = variants["llama2"]
    assert (llama.pos.name, llama.norm.name, llama.ffn.name, llama.n_kv_heads) == ("rope", "rmsnorm", "swiglu", 4)
    assert not llama.bias.enabled and not variants["nobias"].bias.enabled and variants["gpt2"].bias.enabled
    assert variants["nobias"].ffn.name == "gelu" and variants["nobias"].n_kv_heads == 32


def test_memory_figures_by_hand():
    arch = flips(ModelConfig(d_model=64, n_layers=2, n_heads=4, max_seq_len=32, vocab_size=100, tie_embeddings=False),
                gqa_kv_heads=2, model_name="custom")["gqa2"]
    assert lm_params(arch) == count_parameters(torch_lm(arch, device="meta"))
    assert kv_cache_bytes(arch, batch=3, context=10, elem=2) == 2 * 2 * 3 * 2 * 10 * 16 * 2
    per_seq = kv_cache_bytes(arch, 1, 32, 2)
    assert largest_batch(arch, 32, 2, lm_params(arch) * 2 + 5 * per_seq + 1) == 5
    assert largest_batch(arch, 32, 2, 1.0) == 0


def test_full_size_table_has_every_choice_at_7b_and_70b():
    from ablations.predict.full_size_tables import full_size_table
    from blockbench import choices

    text, hw = full_size_table()
    assert hw.name == "h100_sxm"
    lines = text.splitlines()
    assert "7B decode, batch 64" in lines[0] and "70B train step 4,096, batch 1" in lines[0]
    body = {line.split("|")[1].strip(): line for line in lines[2:]}
    # Every declared flip has its row, derived from the declarations alone.
    assert set(body) == ({choice.flip_text(v) for choice in choices() for v in choice.flips}
                         | {"all five (Llama-2's block)"})
    assert "[gqa4]" in body["MHA → GQA"] and "[gqa8]" in body["MHA → GQA"]
