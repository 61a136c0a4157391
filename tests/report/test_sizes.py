"""Full-size figures on the meta device: exact counts, the 70B KV cache, FLOPs against the counter."""

from __future__ import annotations

import pytest
import torch

from ablations.measure.flops import count_flops
from ablations.report import sizes
from blockbench import choices
from components import build_lm, preset
from tests.temporary_choice import temporary_choice

GIB = 2**30


@pytest.fixture(scope="module")
def table():
    return sizes.sizes_table().set_index("model")


def test_exact_parameter_counts(table):
    assert table.loc["gpt2", "params"] == 124_439_808
    assert table.loc["llama2-7b", "params"] == 6_738_415_616
    assert table.loc["llama2-70b", "params"] == 68_976_648_192
    assert list(table.index[:7]) == list(sizes.PUBLISHED)


def test_llama2_70b_kv_cache_mha_against_gqa8(table):
    assert table.loc["llama2-70b", "kv_bytes_context"] == 1.25 * GIB
    assert table.loc["llama2-70b MHA", "kv_bytes_context"] == 10 * GIB
    assert table.loc["llama2-70b", "kv_bytes_per_token"] == 2 * 80 * 8 * 128 * 2
    kv = sizes.kv_70b()
    assert (kv["mha_gib"], kv["gqa_gib"], kv["ratio"], kv["context"], kv["kv_heads"]) == (10, 1.25, 8, 4096, 8)


def test_gpt2_counterfactuals_move_only_their_choice(table):
    base = table.loc["gpt2"]
    rope = table.loc["gpt2 + rope"]
    assert base["params"] - rope["params"] == 1024 * 768  # the learned position table goes
    assert table.loc["gpt2 + rmsnorm", "params_delta"] == -(2 * 12 + 1) * 768  # norm biases go
    assert abs(table.loc["gpt2 + swiglu", "params_delta"]) < 0.001 * base["params"]  # width rule keeps the count
    gqa = table.loc[[m for m in table.index if m.startswith("gpt2 + gqa")][0]]
    assert gqa["kv_ratio"] == gqa["n_kv_heads"] / 12 and gqa["flops_ratio"] < 1
    assert table.loc["gpt2 + all five", "n_kv_heads"] == gqa["n_kv_heads"]


def test_flops_per_token_match_the_counter_on_the_meta_device():
    arch = preset("gpt2")
    lm = build_lm(arch, device="meta")
    tokens = torch.zeros(1, arch.model.max_seq_len, dtype=torch.long, device="meta")
    # Full-context forward of T tokens = T x one token at full context (causal scores counted in full).
    assert count_flops(lambda: lm(tokens)) == arch.model.max_seq_len * sizes.flops_per_token(arch)


def test_cli_prints_both_tables_and_the_70b_line(capsys):
    assert sizes.main([]) == 0
    out = capsys.readouterr().out
    assert "124,439,808" in out and "llama2-70b MHA" in out and "gpt2 + rope" in out
    assert "MHA 10 GiB, GQA-8 1.25 GiB: 8× smaller" in out
    assert sizes.main(["--csv"]) == 0
    assert capsys.readouterr().out.startswith("model,basis,")


def test_the_choices_column_names_every_group_that_is_not_gpt2s(table):
    shown = sizes.formatted(table.reset_index()).set_index("model")["choices not GPT-2's"]
    assert shown["gpt2"] == shown["gpt2-xl"] == sizes.NONE_MOVED
    # Llama-2-7B's attention is GQA with every head its own KV head: MHA, GPT-2's; 70B's has 8 KV heads.
    assert shown["llama2-7b"] == "rope, rmsnorm, swiglu, nobias"
    assert shown["llama2-70b"] == "rope, rmsnorm, swiglu, gqa8, nobias"
    # The groups neither model varies, which the column once could not show, and each flip alone.
    assert shown["gpt2 + qknorm"] == "qknorm" and shown["gpt2 + parallel"] == "parallel"
    assert shown["gpt2 + mla"] == "mla" and shown["gpt2 + all five"] == "rope, rmsnorm, swiglu, gqa2, nobias"
    assert list(table.columns[2:2 + len(choices())]) == [choice.group for choice in choices()]


def test_a_newly_declared_group_appears_in_the_choices_column():
    with temporary_choice() as extra:
        entries = [e for e in sizes.counterfactuals() if e.model == "gpt2 + extra"]
        assert len(entries) == 1, "the counterfactuals do not flip a newly declared group"
        both = sizes.Entry("llama2-70b + extra", "test", preset("llama2-70b").replace(extra=extra.at("on")))
        table = sizes.sizes_table([*entries, both])
        shown = sizes.formatted(table)["choices not GPT-2's"].tolist()
        assert table["extra"].tolist() == ["on", "on"]
    assert shown == ["extra", "rope, rmsnorm, swiglu, gqa8, nobias, extra"]
    assert "extra" not in sizes.columns()
