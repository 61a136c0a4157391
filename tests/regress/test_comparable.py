"""A case whose settings the base does not implement is ``not compared``, with the reason, and never timed.

Each base here is a synthetic tree: the working tree's ``components`` copied and edited the way an older revision
differed (a setting it accepted and ignored, a cache that ignored the window, a sizing that ignored the KV heads),
loaded as the regression check loads a base. No case is timed: the timer is a stand-in.
"""

from __future__ import annotations

import argparse
import json
import shutil
import types
from pathlib import Path

import pytest
import torch

from ablations.measure.timing import PairedTiming
from ablations.regress import check, cli, comparable, measure_case, outcome_lines, report_files
from ablations.regress.cases import Case, all_cases
from ablations.regress.revisions import REPO
from ablations.regress.trees import Tree, head_tree

ARGS = argparse.Namespace(rounds=6, min_rounds=None, min_run_time=0.001, warmup=1, threshold=2.0)
DECLARED_WINDOW = 'setting_flips={"window": {"window": 64}},'


def synthetic_base(tmp_path: Path, file: str, old: str, new: str) -> Tree:
    """The working tree's ``components`` with ``old`` replaced by ``new`` in ``file``, loaded as a base."""
    shutil.copytree(REPO / "components", tmp_path / "components", ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "components" / file
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {file}: the synthetic base needs a new edit"
    path.write_text(text.replace(old, new))
    return Tree("base", tmp_path, "f" * 40).load()


def case(name: str) -> Case:
    return next(candidate for candidate in all_cases() if candidate.name == name)


@pytest.fixture
def timer(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The timer replaced: every round's head/base ratio is 1.3 (a regression, were it timed); returns one entry
    per timed case, so a test sees whether a case was timed."""
    timed: list[str] = []

    def time_case(head: object, base: object, *, rounds: int, **_: object) -> PairedTiming:
        timed.append("timed")
        return PairedTiming([1.3] * rounds, [1.0] * rounds)

    monkeypatch.setattr(measure_case, "time_case", time_case)
    return timed


def test_a_setting_the_base_accepts_but_does_not_declare_is_not_compared_and_never_timed(tmp_path, timer):
    # The base of issue 33: AttnConfig accepted a neutral window and ignored it (5c6304e), so it declared no setting.
    base = synthetic_base(tmp_path, "attention.py", DECLARED_WINDOW, "")
    head = head_tree().load()
    for name in ("attn/mha-w64/forward", "attn/mha-w64/decode", "block/mha-w64/train"):
        row, sides = measure_case.measure(case(name), base, head, ARGS, 0.95)
        assert row["verdict"] == "not compared" and sides == {} and "ratio" not in row
        assert row["reason"] == ("the base does not declare attn.window as a setting (its config accepts it but the "
                                 "declaration does not name it, so the base may ignore it)")
    assert timer == []
    row, _ = measure_case.measure(case("attn/mha/forward"), base, head, ARGS, 0.95)  # what the base declares is timed
    assert row["verdict"] == "regression" and len(timer) == 1


def test_a_base_that_builds_another_design_is_not_compared_where_it_differs(tmp_path, timer):
    # The base declares the window and masks with it, but decodes on a full cache: its decode step is another design.
    base = synthetic_base(tmp_path, "attention.py", "make = KVCache if arch.attn.window is None else RollingKVCache",
                          "make = KVCache")
    head = head_tree().load()
    row, _ = measure_case.measure(case("attn/mha-w64/decode"), base, head, ARGS, 0.95)
    batch, context = 4, 2048
    full, rolling = (2 * batch * 8 * n * 64 for n in (context + 1, 64))  # K and V: batch x heads x slots x head_dim
    assert row["verdict"] == "not compared" and row["reason"] == (
        f"the base builds {full:,} elements of KV cache, the head {rolling:,}: another design")
    assert timer == []
    row, _ = measure_case.measure(case("attn/mha-w64/forward"), base, head, ARGS, 0.95)  # the same design: timed
    assert "ratio" in row and len(timer) == 1


def test_a_base_that_sizes_a_value_otherwise_is_not_compared(tmp_path, timer):
    base = synthetic_base(tmp_path, "attention.py", "replace(attn, n_kv_heads=kv_heads) if attn.n_kv_heads is None",
                          "replace(attn, n_kv_heads=2 * kv_heads) if attn.n_kv_heads is None")
    row, _ = measure_case.measure(case("attn/gqa2/forward"), base, head_tree().load(), ARGS, 0.95)
    assert row["verdict"] == "not compared" and row["reason"] == "the base resolves attn.n_kv_heads=4, the head 2"
    assert timer == []


def test_every_case_is_declared_by_the_tree_it_comes_from():
    # Against itself nothing is left out: a consumer that misses a declared value or setting fails here.
    import components

    gaps = {candidate.name: comparable.declaration_gap(components, candidate.overrides) for candidate in all_cases()}
    assert {name: gap for name, gap in gaps.items() if gap} == {}
    assert any("attn.window" in candidate.overrides for candidate in all_cases())  # the setting flips are among them


def test_a_tree_from_before_declarations_compares_only_what_its_config_classes_name():
    old = types.SimpleNamespace(NormConfig=object, AttnConfig=object)  # no ``choice``: the legacy path
    assert comparable.declaration_gap(old, {"norm": "rmsnorm"}) is None
    assert comparable.declaration_gap(old, {"qknorm": "on"}) == "the base has no choice group qknorm"
    assert comparable.declaration_gap(old, {"attn": "mha", "attn.window": 64}) == (
        "the base declares no settings (attn.window)")


def test_the_design_and_config_gaps_name_the_first_difference():
    from blockbench import choice
    from components import ArchConfig

    assert comparable.design_gap({"parameters": 10}, {"parameters": 10}) is None
    assert comparable.design_gap({"parameters": 10}, {"parameters": 10, "KV cache": 4}) == (
        "the base builds 0 elements of KV cache, the head 4: another design")
    a, b = ArchConfig(attn=choice("attn").at("mha")), ArchConfig(attn=choice("attn").at("mha", window=64))
    assert comparable.config_gap(a, a, ["attn"]) is None
    assert comparable.config_gap(a, b, ["attn"]) == "the base resolves attn.window=None, the head 64"
    assert comparable.config_gap(a, b, ["norm"]) is None  # only the case's own groups are read


def test_the_check_reports_not_compared_cases_apart_and_exits_0(tmp_path, timer, monkeypatch, capsys):
    base = synthetic_base(tmp_path / "base", "attention.py", DECLARED_WINDOW, "")
    monkeypatch.setattr(check, "base_tree", lambda rev, dest: base)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # the test process keeps its threads
    out = tmp_path / "out"
    status = cli.main(["HEAD", "-k", "*/mha-w64/forward", "--no-callgrind", "--rounds", "6", "--out", str(out)])
    assert status == 0 and timer == []
    report = json.loads((out / report_files.REPORT_JSON).read_text())
    assert report["verdict"] == "ok" and report["regressions"] == [] and report["groups"] == []
    reason = "the base does not declare attn.window as a setting"
    assert [line.split(" (")[0] for line in report["not_compared"]] == [
        f"not compared: attn/mha-w64/forward: {reason}", f"not compared: block/mha-w64/forward: {reason}"]
    text = (out / report_files.SUMMARY_MD).read_text()
    assert "**no regression**: 0 of 0 cases regressed, 0 passed, 0 not judged; 2 cases not compared (below)." in text
    assert report["counts"]["not_compared"] == 2 and report["not_judged"] == []
    assert f"| `attn/mha-w64/forward` | — | not compared: {reason}" in text
    assert f"- not compared: block/mha-w64/forward: {reason}" in text
    assert "[1/2] attn/mha-w64/forward: not compared: " + reason in capsys.readouterr().err


def test_a_not_compared_case_is_never_a_regression_or_in_a_group():
    rows: list[dict] = [{"name": f"block/v{i}/forward", "ratios": [1.0] * 12} for i in range(2)]
    rows.append({"name": "block/mha-w64/forward", "verdict": "not compared", "reason": "r"})
    from ablations.regress.paired import pooled_rows

    (group,) = pooled_rows(rows, 0.02, 0.99)
    assert group["cases"] == 2 and group["rounds"] == 24
    report = {"cases": rows, "groups": [group], "threshold_pct": 2.0, "callgrind_threshold_pct": 1.0}
    assert outcome_lines.regression_lines(report) == []
    assert outcome_lines.not_compared_lines(report) == ["not compared: block/mha-w64/forward: r"]

