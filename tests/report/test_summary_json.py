"""``summary.json`` (``ablations.report.summary_json``): written beside every report, valid against its versioned
schema (the committed references' too), holding what the verdict block says; ``blockbench compare`` on two of them
fails exactly when a verdict changed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from ablations.report.markdown import build_report
from ablations.results.summary_schema import SCHEMA, SUMMARY, VERSION
from ablations.tools.compare import main as compare
from tests.report.conftest import recorded_inputs

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "results" / "reference"


@pytest.fixture(scope="module")
def written(synthetic, tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("summary")
    build_report(folder, synthetic(sweeps=("norm", "kv", "pos")), draw_figures=False, inputs=recorded_inputs())
    return folder, json.loads((folder / SUMMARY).read_text())


def test_every_report_writes_a_summary_valid_against_its_schema(written):
    _, content = written
    jsonschema.validate(content, SCHEMA)
    assert content["schema_version"] == VERSION and content["choices"]


def test_the_summary_holds_what_the_verdict_block_says(written):
    folder, content = written
    report = (folder / "REPORT.md").read_text()
    for entry in content["choices"]:
        line = next(ln for ln in report.splitlines() if ln.startswith(f"- **{entry['choice']}**"))
        for ratio in entry["train_step"]:
            assert f"{ratio['device']} {ratio['value']:.3f}×" in line
        if entry["loss"] is not None:
            assert f"{entry['loss']['diff']:+.3f}".replace("-", "−") in line


def test_the_committed_reference_summaries_are_valid():
    found = sorted(REFERENCE.rglob(SUMMARY))
    assert REFERENCE / SUMMARY in found, "the main reference's report has no summary.json: rebuild it"
    for path in found:
        jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def _changed(content: dict) -> dict:
    changed = copy.deepcopy(content)
    entry = next(c for c in changed["choices"] if c["train_step"])
    entry["train_step"][0].update(value=0.5, lo=0.45, hi=0.55, reading="faster")
    return changed


def test_compare_fails_on_a_changed_verdict_and_passes_on_moved_numbers(written, tmp_path, capsys):
    folder, content = written
    same = tmp_path / "same.json"
    moved = copy.deepcopy(content)
    loss = next(c["loss"] for c in moved["choices"] if c["loss"])
    loss["diff"] += 0.0005
    same.write_text(json.dumps(moved))
    assert compare([str(folder / SUMMARY), str(same)]) == 0
    assert "moved" in capsys.readouterr().out
    other = tmp_path / "other.json"
    other.write_text(json.dumps(_changed(content)))
    assert compare([str(folder / SUMMARY), str(other)]) == 1
    out = capsys.readouterr().out
    assert "CHANGED" in out and "-> faster" in out and out.strip().endswith("1 verdict(s) changed")


def test_compare_refuses_a_file_that_is_not_a_summary_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 99}))
    assert compare([str(bad), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schema_version" in err[0]


def test_a_loss_verdict_that_changed_with_its_regime_still_fails_compare(written, tmp_path, capsys):
    folder, content = written
    moved = copy.deepcopy(content)
    loss = next(c["loss"] for c in moved["choices"] if c["loss"])
    loss.update(regime=loss["regime"] + ", each arm its own lr", verdict="worse")
    other = tmp_path / "regime.json"
    other.write_text(json.dumps(moved))
    assert compare([str(folder / SUMMARY), str(other)]) == 1
    assert "CHANGED" in capsys.readouterr().out
