"""The glossary (``ablations.report.glossary``): every column of the report's first table and every term the issue
of plain reading named has an entry, each entry is used somewhere a reader meets it, and the docs page shows them
all."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ablations.quality.worth import worth
from ablations.report.buys import buys_frame
from ablations.report.comparison import comparison
from ablations.report.glossary import GLOSSARY, glossary_markdown
from ablations.report.quality_sections import summarize_quality
from ablations.report.tables import split
from tests.report.conftest import recorded_inputs

ROOT = Path(__file__).resolve().parents[2]
# Words the README and the reports lean on without saying what they are.
LEANED_ON = ("knot", "known answer", "curve seeds", "k in steps", "Holm level", "could have detected", "A/A",
             "noise floor", "ABBA", "rung", "horizon", "fast step", "point", "flip", "main job", "smoke profile",
             "extended tier", "roofline bound", "nats/byte", "verdict", "tuned rate", "scan seeds",
             "overhead-bound", "cosine schedule", "wsd")


def test_every_column_of_what_each_choice_buys_has_an_entry(synthetic):
    table = synthetic(sweeps=("norm", "kv", "pos"))
    measured, quality, _ = split(table)
    frame = buys_frame(table, comparison(measured), summarize_quality(table)[0], worth(table), recorded_inputs())
    shown = [c for c in frame.columns if c not in ("sweep", "variant", "order", "choice")]
    assert shown and not [c for c in shown if c not in GLOSSARY]


def test_every_leaned_on_term_has_an_entry_of_one_or_two_sentences():
    assert not [t for t in LEANED_ON if t not in GLOSSARY]
    for term, text in GLOSSARY.items():
        assert text.count(". ") + 1 <= 2 and text.endswith("."), term


def test_every_entry_is_a_term_a_reader_meets():
    read = " ".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
                    if p.name != "glossary.md")
    read += " ".join(pd.read_csv(ROOT / "results" / "reference" / "results.csv", nrows=0).columns)
    read += (ROOT / "results" / "reference" / "REPORT.md").read_text()
    read = " ".join(read.split()).lower()  # a term wrapped across lines is still met
    unused = [t for t in GLOSSARY if t.lower() not in read]
    assert not unused, f"glossary entries no page or report uses: {unused}"


def test_the_docs_page_shows_every_entry():
    page = glossary_markdown()
    assert all(f"**{term}**" in page for term in GLOSSARY)
    assert "<!-- generated: glossary -->" in (ROOT / "docs" / "glossary.md").read_text()
