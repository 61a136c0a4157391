"""The block's test-only extra work (``components.block.add_work``) and ``scripts/regress_power.py``'s use of it:
the plain block is untouched, the hook adds exactly its FLOPs with outputs unchanged, and the script's injection
reaches the tree it writes into and no other (the regression check's head, not its base)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch

import components
from ablations.measure.flops import analytic_forward_flops, count_flops
from ablations.regress.cases import D_MODEL, arch
from ablations.regress.trees import Tree
from components import block

ROOT = Path(__file__).resolve().parents[2]
BATCH, SEQ, WIDTH = 1, 16, 24


@pytest.fixture
def plain_after():
    """Whatever a test sets, later tests build plain blocks."""
    yield
    block.add_work(0)


def decoder(c: object = components) -> torch.nn.Module:
    """The regression check's block (``arch``: GPT-2's, one layer at d=512) from tree ``c``."""
    torch.manual_seed(0)
    return c.build_decoder(arch(c))


def forward_flops(model: torch.nn.Module) -> int:
    x = torch.randn(BATCH, SEQ, D_MODEL)
    return count_flops(lambda: model(x))


def test_the_default_block_keeps_its_class_forward_and_no_buffer(plain_after):
    block.add_work(WIDTH)
    block.add_work(0)
    model = decoder()
    for b in model.blocks:
        assert "forward" not in vars(b) and "_waste" not in dict(b.named_buffers())
    assert forward_flops(model) == analytic_forward_flops(arch(components), BATCH, SEQ)


def test_add_work_adds_its_flops_with_outputs_unchanged(plain_after):
    plain = decoder()
    block.add_work(WIDTH)
    worked = decoder()
    assert all("forward" not in vars(b) for b in plain.blocks)  # built before: stays plain
    worked.load_state_dict(plain.state_dict())  # the zero matrix is not state: same weights
    x = torch.randn(BATCH, SEQ, D_MODEL)
    with torch.no_grad():
        assert torch.equal(worked(x), plain(x))
    layers = len(worked.blocks)
    assert forward_flops(worked) - forward_flops(plain) == layers * 4 * D_MODEL * WIDTH * BATCH * SEQ


def test_add_work_refuses_a_negative_width(plain_after):
    with pytest.raises(ValueError, match="allowed: 0"):
        block.add_work(-1)


def load_script() -> object:
    spec = importlib.util.spec_from_file_location("regress_power", ROOT / "scripts" / "regress_power.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_adds_the_work_to_the_tree_it_writes_into_alone(tmp_path):
    script = load_script()
    trees = {}
    for label in ("base", "head"):
        shutil.copytree(ROOT / "components", tmp_path / label / "components",
                        ignore=shutil.ignore_patterns("__pycache__"))
    script.add_work_call(tmp_path / "head", WIDTH)
    for label in ("base", "head"):
        trees[label] = Tree(label, tmp_path / label, label).load()
    flops = {}
    for label, tree in trees.items():
        with tree.active() as c:
            flops[label] = forward_flops(decoder(c))
    assert flops["head"] - flops["base"] == 4 * D_MODEL * WIDTH * BATCH * SEQ  # arch(): one layer
    assert flops["base"] == analytic_forward_flops(arch(components), BATCH, SEQ)
    assert block._added_work == 0  # this process's own components: untouched
