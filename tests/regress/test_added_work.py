"""The test-only block with extra work (``ablations.regress.added_work``) and ``scripts/regress_power.py``'s use of
it: the model modules know nothing of it, the subclass adds exactly its FLOPs with outputs unchanged, and the
script's injection reaches the tree it writes into and no other (the regression check's head, not its base)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch

import components
from ablations.measure.flops import analytic_forward_flops, count_flops
from ablations.measure.shapes import D_MODEL
from ablations.regress.added_work import with_added_work
from ablations.regress.architecture import arch
from ablations.regress.trees import Tree
from components import model as model_module

ROOT = Path(__file__).resolve().parents[2]
BATCH, SEQ, WIDTH = 1, 16, 24


def decoder(loaded: object = components) -> torch.nn.Module:
    """The regression check's block (``arch``: GPT-2's, one layer at d=512) from tree ``loaded``."""
    torch.manual_seed(0)
    return loaded.build_decoder(arch(loaded))


def forward_flops(model: torch.nn.Module) -> int:
    x = torch.randn(BATCH, SEQ, D_MODEL)
    return count_flops(lambda: model(x))


def plain(model: torch.nn.Module) -> bool:
    return all(type(b) is components.Block and "waste" not in dict(b.named_buffers()) for b in model.blocks)


def test_the_block_is_plain_and_does_its_counted_work():
    model = decoder()
    assert plain(model) and not hasattr(components.block, "add_work")
    assert forward_flops(model) == analytic_forward_flops(arch(components), BATCH, SEQ)


def test_added_work_adds_its_flops_with_outputs_unchanged(monkeypatch):
    before = decoder()
    monkeypatch.setattr(model_module, "Block", with_added_work(components.Block, WIDTH))
    worked = decoder()
    assert not plain(worked)
    assert all(torch.equal(a, b) for a, b in zip(worked.state_dict().values(), before.state_dict().values(),
                                                   strict=True))  # the same draws, and the zero matrix is not state
    x = torch.randn(BATCH, SEQ, D_MODEL)
    with torch.no_grad():
        assert torch.equal(worked(x), before(x))
    layers = len(worked.blocks)
    assert forward_flops(worked) - forward_flops(before) == layers * 4 * D_MODEL * WIDTH * BATCH * SEQ


def test_no_width_is_the_block_itself_and_a_negative_one_is_refused():
    assert with_added_work(components.Block, 0) is components.Block
    with pytest.raises(ValueError, match="allowed: 0"):
        with_added_work(components.Block, -1)


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
        with tree.active() as loaded:
            flops[label] = forward_flops(decoder(loaded))
    assert flops["head"] - flops["base"] == 4 * D_MODEL * WIDTH * BATCH * SEQ  # arch(): one layer
    assert flops["base"] == analytic_forward_flops(arch(components), BATCH, SEQ)
    assert plain(decoder())  # this process's own components: untouched
