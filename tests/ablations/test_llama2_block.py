"""Llama-2's block has one definition (``components.llama2_block``), derived from the declarations: every way the
harness reaches it builds the same ``ArchConfig``; RoPE's layout is its parameter and reaches the rotation; GQA is
sized by the attention's declaration."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import components
from ablations.config.checks import arch_from
from ablations.config.columns import row_values
from ablations.measure.shapes import GQA_KV_HEADS as REGRESS_GQA_KV_HEADS
from ablations.predict import scenarios
from ablations.regress.architecture import arch as regress_arch
from ablations.regress.cases import block_variants as regress_block_variants
from ablations.report import flip_sets
from ablations.results.variant_labels import variant_label
from blockbench import choice, llama2_choices
from components import (
    AttnConfig,
    ConfigError,
    ModelConfig,
    PosConfig,
    RotaryPositions,
    baselines,
    build_decoder,
    flip_configs,
    llama2_block,
    preset,
)
from components.baselines import baseline_of
from components.presets import llama2_block as presets_llama2_block
from scripts import rope_layout_timing
from tests.benchmarks import cases as bench_cases
from tests.quality.helpers import composed

UNTIED = ModelConfig(d_model=64, n_layers=1, n_heads=8, max_seq_len=64, tie_embeddings=False)


def test_one_definition_reached_by_every_name():
    assert baselines.llama2_block is flip_configs.llama2_block is flip_sets.llama2_block is presets_llama2_block
    assert presets_llama2_block is components.llama2_block
    # variant=llama2 and baseline=llama2 compose the block it builds at the point's sizes and KV heads.
    cfg = composed("variant=llama2")
    arch = arch_from(cfg)
    assert arch == llama2_block(arch.model, int(cfg.model.gqa_kv_heads))
    assert baseline_of(arch, "llama2", int(cfg.model.gqa_kv_heads)) == arch
    # The timed cases: the regression check's and the benchmarks' block/llama2 (their models keep tied embeddings).
    timed = regress_arch(components, **regress_block_variants()["llama2"])
    assert timed == llama2_block(timed.model, REGRESS_GQA_KV_HEADS[-1])
    bench = bench_cases.arch(**bench_cases.SWEEPS["all"]["llama2"])
    assert bench == llama2_block(bench.model, bench_cases.GQA_KV_HEADS)
    # The predictor's and sizes' all-at-once flip of GPT-2's block (which keeps that block's tied embeddings).
    gpt2 = components.ArchConfig(model=UNTIED)
    assert flip_sets.flips_of(gpt2, 2)["llama2"] == llama2_block(UNTIED, 2)
    # The presets: the block at their sizes, with their own FFN rule (and Mistral's window).
    for name, kv in (("llama2-7b", 32), ("llama2-70b", 8), ("mistral-7b", 8)):
        published = preset(name)
        block = llama2_block(published.model, kv)
        assert published.replace(ffn=block.ffn, attn=replace(published.attn, window=None)) == block, name


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_the_layout_is_a_parameter_that_reaches_the_rope(layout):
    arch = llama2_block(UNTIED, 2, layout)
    rope = build_decoder(arch).positions
    assert isinstance(rope, RotaryPositions) and rope.rotation(4).layout == layout
    assert row_values(choice("pos"), arch) == {"pos": f"rope-{layout}"}
    assert variant_label(arch) == "llama2"  # the layout changes the rotation, not which block it is
    # The same weights and input give another output in the other layout: the rotation reads it.
    other = "interleaved" if layout == "half" else "half"
    x = torch.randn(1, 6, UNTIED.d_model, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    mine = build_decoder(arch)
    theirs = build_decoder(llama2_block(UNTIED, 2, other))
    theirs.load_state_dict(mine.state_dict())
    with torch.no_grad():
        assert (mine(x) - theirs(x)).abs().max() > 1e-3


def test_the_measured_layout_is_what_pos_rope_composes():
    """The block's default layout is ``pos=rope``'s, so the measured block, every RoPE flip and the presets rotate
    alike (half: the Hub's checkpoints' layout; docs/choices.md)."""
    composed_rope = arch_from(composed("pos=rope")).pos
    assert llama2_block(UNTIED, 2).pos == composed_rope == PosConfig("rope")
    assert composed_rope.layout == "half"
    assert all(preset(n).pos.layout == "half" for n in ("llama2-7b", "llama2-70b", "mistral-7b"))


@pytest.mark.parametrize("kv", [1, 2, 4, 8])
def test_gqa_is_sized_by_the_attention_declaration(kv):
    arch = llama2_block(UNTIED, kv)
    assert arch.attn == choice("attn").at_size("gqa", kv) == AttnConfig("gqa", kv)
    assert arch.validate().n_kv_heads == kv
    # Every head its own KV head is MHA by the declaration: Llama-2-7B's shape, the leave-one-out point's name.
    assert variant_label(arch) == ("llama2-mha" if kv == UNTIED.n_heads else "llama2")
    assert all(declared.has(arch, declared.llama2) for declared in llama2_choices() if declared.group != "attn")


def test_kv_heads_that_do_not_divide_the_heads_are_refused():
    with pytest.raises(ConfigError, match=r"^attn\.n_kv_heads=3 must be >= 1 and divide model\.n_heads=8"):
        llama2_block(UNTIED, 3).validate()


def test_the_presets_kv_heads():
    assert [preset(n).n_kv_heads for n in ("llama2-7b", "llama2-13b", "llama2-70b")] == [32, 40, 8]
    assert variant_label(preset("llama2-7b")) == "llama2-mha" and variant_label(preset("llama2-70b")) == "llama2"


def test_the_layout_timing_script_times_the_one_block_in_each_layout():
    """``scripts/rope_layout_timing.py`` (run alone, never here): both sides are the regression case's block with
    the same weights and input, differing only in the layout."""
    sides = {layout: rope_layout_timing.subject(layout, "forward") for layout in rope_layout_timing.LAYOUTS}
    half, interleaved = sides["half"], sides["interleaved"]
    assert len(half.state) == len(interleaved.state)
    assert all(torch.equal(a, b) for a, b in zip(half.state, interleaved.state, strict=True))
    assert (half.call() - interleaved.call()).abs().max() > 1e-3


@pytest.mark.parametrize("model_name,kv", [("llama2_7b", 8), ("llama2_70b", 8), ("mistral_7b", 8), ("custom", 2)])
def test_the_predictors_llama2_is_the_one_block_with_the_presets_ffn_rule(model_name, kv):
    """Both sets of the predictor's flips start from ``llama2_block`` at the size; a published size keeps its FFN
    rule (70B's multiple_of and multiplier, Mistral's explicit width), the only settings a flip carries over."""
    name = model_name.replace("_", "-")
    model = preset(name).model if name in components.PRESETS else UNTIED
    block = llama2_block(model, kv)
    expected = block.replace(ffn=replace(preset(name).ffn)) if name in components.PRESETS else block
    on_gpt2 = flip_sets.flips_at_size(model, kv, model_name)["llama2"]
    assert on_gpt2 == expected and variant_label(on_gpt2) == "llama2"
    assert scenarios.llama2_flips(model, kv, model_name)["llama2"] == on_gpt2
    assert flip_sets.flips_of(components.ArchConfig(model=model), kv)["llama2"] == block


def llama2_assemblies(source: str) -> list[int]:
    """Lines of ``source`` that build a mapping of choice groups to their Llama-2 values: a dict comprehension keyed
    by ``choice.group`` over ``choices()`` or ``llama2_choices()`` whose value reads ``choice.llama2``, or a loop over
    them that stores ``[choice.group]`` and reads ``choice.llama2``. ``choice.has(arch, choice.llama2)`` is a question,
    not an assembly."""
    def iterates_choices(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
            "choices", "llama2_choices")

    def reads_llama2(node: ast.AST, var: str) -> bool:
        asked = {id(n.args[1]) for n in ast.walk(node) if isinstance(n, ast.Call)
                 and getattr(n.func, "attr", "") == "has" and len(n.args) > 1}
        return any(isinstance(n, ast.Attribute) and n.attr == "llama2" and getattr(n.value, "id", "") == var
                   and id(n) not in asked for n in ast.walk(node))

    def is_group(node: ast.AST, var: str) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "group" and getattr(node.value, "id", "") == var

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.DictComp):
            for gen in node.generators:
                var = getattr(gen.target, "id", "")
                if iterates_choices(gen.iter) and is_group(node.key, var) and reads_llama2(node.value, var):
                    lines.append(node.lineno)
        elif isinstance(node, ast.For) and iterates_choices(node.iter):
            var = getattr(node.target, "id", "")
            body = ast.Module(body=node.body, type_ignores=[])
            stores = any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and is_group(n.slice, var)
                         for n in ast.walk(body))
            if stores and reads_llama2(body, var):
                lines.append(node.lineno)
    return lines


# What this test refuses: the Llama-2 block ``flips_of`` assembled for itself, and the regression case's own dict.
ASSEMBLED_ELSEWHERE = (
    "for choice in choices():\n    for value in choice.flips:\n        group_config = choice.at(value)\n"
    "        if choice.in_llama2 and value == choice.llama2:\n            llama[choice.group] = group_config\n",
    "out = {**{choice.group: choice.llama2 for choice in llama2_choices()}, 'kv': 2}\n",
    "arch = ArchConfig(**{choice.group: choice.at_size(choice.llama2, kv) for choice in components.llama2_choices()\n"
    "                     if choice is not x})\n",
)


def test_the_scan_finds_an_assembly_and_passes_a_question():
    assert all(llama2_assemblies(code) == [1] for code in ASSEMBLED_ELSEWHERE)
    assert llama2_assemblies(
        "n = sum(choice.has(arch, choice.llama2) for choice in llama2_choices())\n"
        "d = {choice.group: choice.has(arch, choice.llama2) for choice in llama2_choices()}\n") == []


def test_no_module_but_the_presets_assembles_llama2s_block():
    """Every Llama-2 block comes from ``components.presets`` (``llama2_block``, or ``llama2_values`` where the block
    is named as overrides): a module that maps the choices to their ``llama2`` values itself is a second definition."""
    root = Path(__file__).resolve().parents[2]
    found = {str(path.relative_to(root)): lines for package in ("ablations", "components", "blockbench")
             for path in sorted((root / package).rglob("*.py"))
             if (lines := llama2_assemblies(path.read_text())) and path != root / "components" / "presets.py"}
    assert found == {}
