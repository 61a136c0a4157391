"""The interaction sweeps compose with unique, readable labels; like-for-like GQA; the train checks."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.quality.arch import map_kv_heads
from ablations.quality.stats import _rung, summarize
from ablations.results.variant_labels import variant_label
from ablations.runner import check_point as check_run
from ablations.runner import plan_point
from components import (
    ArchConfig,
    AttnConfig,
    BiasConfig,
    ConfigError,
    FFNConfig,
    ModelConfig,
    build_decoder,
    build_lm,
    count_parameters,
)
from components.matched_params import match_params
from tests.quality.helpers import composed

LADDER = ["gpt2", "rmsnorm", "rope+rmsnorm", "rope+rmsnorm+swiglu", "llama2-bias-tied", "llama2"]
LEAVE_ONE_OUT = ["llama2", "llama2-learned", "llama2-layernorm", "llama2-gelu", "llama2-mha", "llama2-bias",
                 "llama2-tied"]


def labels(sweep: str) -> list[str]:
    return [job.plan.pair.variant for job in plan_run([f"+sweep={sweep}"]).jobs]


@pytest.mark.parametrize("sweep,expected", [("ladder", LADDER), ("leave_one_out", LEAVE_ONE_OUT),
                                            ("gqa_matched", ["gpt2", "gqa2", "gqa2-matched"])])
def test_interaction_sweeps_compose_with_unique_labels(sweep, expected):
    # Their prevalidation (point counts, every point's checks) is test_every_sweep_composes_and_validates's.
    assert labels(sweep) == expected


def test_the_llama2_quality_model_is_llama2s_block_without_biases_and_with_an_untied_head():
    cfg = composed("variant=llama2")
    lm = build_lm(plan_point(cfg).quality.arch, device="meta")
    assert not [n for n, _ in lm.named_parameters() if n.endswith("bias")]
    assert lm.head.weight is not lm.embed.weight
    gpt2 = build_lm(plan_point(composed()).quality.arch, device="meta")
    assert gpt2.head.weight is gpt2.embed.weight
    assert {n.rsplit(".", 2)[-2] for n, _ in gpt2.named_parameters() if n.endswith("bias")} == {
        "q", "k", "v", "out", "up", "down", "norm1", "norm2", "norm"}


def test_a_rung_counts_the_bias_choice():
    rows = pd.DataFrame([dict(pos=p, norm="rmsnorm", ffn="swiglu", attn="gqa", n_kv_heads=1, n_heads=4, bias=b)
                         for p, b in (("rope-half", True), ("rope-half", "False"), ("learned", False))])
    assert [_rung(r) for _, r in rows.iterrows()] == [4, 5, 4]


def test_profile_selects_its_training_and_an_override_wins():
    assert composed().train.name == "smoke"  # the helper composes profile=smoke
    assert composed("train=default").train.name == "default"
    assert composed("train.seeds=[4,5]").train.seeds == [4, 5]


# (d, heads, attention): GQA and MQA save K/V weights; MLA saves weights at 16 heads of 64 (full-rank or compressed
# query) and costs them at 4 heads of 192, where its RoPE part and up-projections outweigh MHA's K and V.
MATCHED = [(1024, 16, AttnConfig("gqa", 2)), (128, 4, AttnConfig("gqa", 1)), (768, 12, AttnConfig("gqa", 4)),
           (1024, 16, AttnConfig("mla")), (1024, 16, AttnConfig("mla", q_lora_rank=256)), (768, 4, AttnConfig("mla"))]


@pytest.mark.parametrize("ffn", ["gelu", "swiglu"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("d,heads,attn", MATCHED, ids=[f"{d}-{h}-{a.name}-q{a.q_lora_rank}" for d, h, a in MATCHED])
def test_matched_attention_has_mha_parameters_to_one_hidden_unit(ffn, bias, d, heads, attn):
    model = ModelConfig(d, 1, heads, 64)
    on_off = BiasConfig("on" if bias else "off")
    mha = ArchConfig(model, ffn=FFNConfig(ffn), bias=on_off)
    other = mha.replace(attn=attn)
    matched = match_params(other)
    count = lambda a: count_parameters(build_decoder(a, device="meta"))  # noqa: E731
    per_unit = (3 if ffn == "swiglu" else 2) * d + (2 if ffn == "swiglu" else 1) * bias
    assert count(other) != count(mha)
    # The FFN moves the way the attention's weights did: wider where they were saved, narrower where they cost.
    assert (matched.ffn_hidden > other.ffn_hidden) == (count(other) < count(mha))
    assert abs(count(matched) - count(mha)) <= per_unit / 2
    assert variant_label(matched, matched=True) == variant_label(other) + "-matched"
    assert match_params(mha) == mha and variant_label(mha, matched=True) == variant_label(mha)


def test_match_params_refuses_attention_the_ffn_cannot_make_up_for():
    # A latent of 4096 at d=64: MLA has far more weights than MHA and the whole FFN together.
    mla = ArchConfig(ModelConfig(64, 1, 1, 64), attn=AttnConfig("mla", kv_lora_rank=4096))
    with pytest.raises(ConfigError, match=r"^match_params=true cannot match attn=mla: its attention has \d+ weights "
                                          r"more than MHA's, more than the FFN's 256 hidden units hold"):
        match_params(mla)


def test_mla_with_match_params_is_matched_in_the_measurement_and_the_quality_model():
    cfg, plain = composed("attn=mla", "match_params=true"), composed("attn=mla")
    arch, unmatched = check_run(cfg), check_run(plain)
    assert arch == match_params(unmatched) != unmatched
    assert variant_label(arch, matched=True) == "mla-matched"
    matched, alone = plan_point(cfg).quality.arch, plan_point(plain).quality.arch
    assert matched == match_params(alone) != alone


def test_kv_heads_keep_query_heads_per_kv_head():
    assert [map_kv_heads(kv, 16, 4) for kv in (16, 8, 4, 2, 1)] == [4, 2, 1, 1, 1]
    assert map_kv_heads(4, 16, 8) == 2 and map_kv_heads(2, 12, 6) == 1 and map_kv_heads(6, 12, 6) == 3


def test_learned_table_is_exactly_the_training_context():
    cfg = composed()
    assert plan_point(cfg).quality.arch.model.max_seq_len == 32
    cfg = composed("pos=rope")
    assert plan_point(cfg).quality.arch.model.max_seq_len == 128


@pytest.mark.parametrize("args,expected", [
    (["measure=false", "train.enabled=false"], "leave nothing to run"),
    (["train.extrapolation=[1,3,4]"], "train.extrapolation=[1, 3, 4]"),
    (["train.d_model=130"], "train.d_model=130 must be divisible by train.n_heads=4"),
    (["train.seeds=[]"], "train.seeds=[]"),
    (["train.seeds=[1,1]"], "repeats a seed"),
    (["train.warmup=300"], "train.warmup=300 must be below train.steps=250"),
    (["train.n_kv_heads=3"], "train.n_kv_heads=3 must divide train.n_heads=4"),
    (["train.steps=0"], "train.steps=0 must be a positive integer"),
    (["data.val_fraction=1.5"], "data.val_fraction=1.5"),
    (["train.check_budgets=[2]"], "train.check_budgets=[2.0] must lie strictly between the curve's knots"),
    (["train.check_budgets=[8]"], "train.check_budgets=[8.0] must lie strictly between the curve's knots"),
    (["train.budgets=[]", "train.check_budgets=[1.5]"], "train.check_budgets=[1.5] must lie strictly between"),
])
def test_bad_training_settings_are_one_line(args, expected):
    with pytest.raises(UsageError) as exit_info:
        plan_run(args)
    err = exit_info.value.message
    assert err.count("\n") == 0 and expected in err, err


# Extended: test_interaction_sweeps_compose_with_unique_labels composes it; this trains each of its points.
@pytest.mark.extended
def test_leave_one_out_end_to_end(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ablations", "+sweep=leave_one_out", "profile=smoke", "model=tiny", "threads=1",
         "train.steps=8", "train.seeds=[0,1]", f"hydra.sweep.dir={tmp_path}"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["variant"]) == set(LEAVE_ONE_OUT) and set(table["status"]) == {"ok"}
    assert "latency" not in set(table["metric"])  # quality only
    s = summarize(table)
    final = s[s.metric == "val_loss"].set_index("variant")
    assert (final["reference"] == "llama2").all() and (final["n"] == 2).all()
    assert final.loc["llama2", "verdict"] == "baseline"
    assert s[(s.variant == "llama2-learned") & (s.seq_len == 128) & (s.reference == "llama2")]["verdict"].item() \
        == "cannot"
