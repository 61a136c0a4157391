"""The headline table (``ablations.report.headline``): built from a results table, and the copies the README and
docs show are exactly what it builds from the committed reference."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from ablations.report.flips import flip_name
from ablations.report.formatting import number_word
from ablations.report.headline import (
    README_END,
    README_START,
    baseline_line,
    headline_table,
    main,
    readme_findings,
)
from ablations.report.tables import ReportError, load_table
from ablations.results.report_inputs import read_report_inputs
from blockbench import choices
from components import ArchConfig, ModelConfig, llama2_block

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "results" / "reference"
# What the reference's report reads beside its rows.
INPUTS = read_report_inputs([REFERENCE])
COPIES = [ROOT / "docs" / "findings.md"]
HEADER = "| choice | params"


@pytest.fixture(scope="module")
def reference():
    return pd.concat([load_table(REFERENCE), load_table(REFERENCE / "transfer")], ignore_index=True)


def shown_table(path: Path) -> str:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


@pytest.mark.parametrize("path", COPIES, ids=[p.name for p in COPIES])
def test_every_copy_is_what_the_reference_builds(reference, path):
    built = headline_table(reference, INPUTS)
    assert shown_table(path) == built, (
        f"{path.relative_to(ROOT)}'s headline table is not what `python -m ablations.report.headline "
        f"results/reference` prints now:\n{built}\n(paste it over the table)")


def test_the_baseline_line_is_quoted_where_the_table_is(reference):
    line = baseline_line(reference)
    for path in COPIES:
        assert line in path.read_text().replace("\n", " "), f"{path.name} should quote the A/A line: {line}"


def test_the_readmes_findings_are_what_its_sources_build_now():
    readme = (ROOT / "README.md").read_text()
    shown = readme.split(README_START, 1)[1].split(README_END, 1)[0].strip("\n")
    built = readme_findings(ROOT)
    assert shown == built, "README's findings are stale: python -m ablations.report.headline --readme --write"
    table = [ln for ln in shown.splitlines() if ln.startswith("| ")]
    assert table and len(table[0].split(" | ")) <= 7  # the README's table: at most 7 columns
    assert sum(ln.startswith("- **") for ln in shown.splitlines()) <= 8  # the verdicts: at most 8 lines
    assert readme.index(README_START) < readme.index("## Choices and sweeps")


def test_one_row_per_flip_in_declaration_order_llama2_last(reference):
    rows = headline_table(reference, INPUTS).splitlines()[2:]
    names = [r.split(" | ")[0].lstrip("| ") for r in rows]
    moved = [choice for choice in choices() if choice.in_llama2]
    assert [n.split(" (")[0] for n in names[:-1]] == [choice.flip_text(choice.llama2) for choice in moved]
    # Llama-2's quality model also unties the embeddings: six changes, counted as six
    assert names[-1].startswith(f"all {number_word(len(moved) + 1)} (Llama-2's block)")
    header = headline_table(reference, INPUTS).splitlines()[0].split(" | ")
    for row in rows:  # every time cell and multiplier is a median with an interval, every loss cell has its verdict
        cells = dict(zip(header, row.split(" | "), strict=True))
        assert all("× [" in cells[key] for key in ("train step ×", "decode ×", "compute multiplier [CI]")), row
        assert cells["Δ loss [CI]"].endswith(("better", "worse", "no detectable difference")), row


def test_flip_names_come_from_the_declarations():
    model = ModelConfig(n_heads=16)
    assert flip_name("gpt2", ArchConfig(model=model)) is None  # nothing moved: no row
    moved = sum(choice.in_llama2 for choice in choices())
    assert flip_name("llama2", llama2_block(model, 2)) == f"all {number_word(moved)} (Llama-2's block)"
    untied = replace(model, tie_embeddings=False)
    assert flip_name("llama2", llama2_block(untied, 2)) == f"all {number_word(moved + 1)} (Llama-2's block)"
    five = f"Llama-2's {number_word(moved)} choices, tied embeddings"
    assert flip_name("llama2-tied", llama2_block(model, 2)) == five
    assert flip_name("gpt2-untied", ArchConfig(model=untied)) == "tied → untied embeddings"
    for choice in choices():
        if choice.in_llama2:
            arch = llama2_block(model, 2)
            one = ArchConfig(model=model, **{choice.group: getattr(arch, choice.group)})
            assert flip_name(choice.value_name(choice.llama2), one) == choice.flip_text(choice.llama2)


def test_the_command_prints_the_table_and_a_bad_folder_is_one_line(reference, capsys, tmp_path):
    assert main([str(REFERENCE), str(REFERENCE / "transfer")]) == 0
    assert headline_table(reference, INPUTS) in capsys.readouterr().out
    assert main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing" in err[0]


def test_a_sweep_the_table_cannot_be_built_from_is_one_line(reference, capsys):
    assert main([str(REFERENCE), "--sweep", "pos"]) == 2  # quality only: no timed rows
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "no timed rows of sweep 'pos'" in line
    with pytest.raises(ReportError, match="no decode rows"):
        headline_table(reference[reference["mode"] != "decode"], INPUTS)
