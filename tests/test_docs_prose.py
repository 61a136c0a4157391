"""The README and docs/ instruct; they are not a lab notebook.

- No dated line: no calendar date ("2026-12-04", "December 2026", "4 December 2026") and no "this morning",
  "yesterday" or "today". Dates belong to the results folders' READMEs and to CHANGELOG.md. A date inside an
  inline code span (a file or folder name) is a name, not a date, and is allowed.
- The main job's run time and seed counts have one source, ``docs/run_times.md`` (generated from the committed
  rows by ``python -m ablations.report.run_times``): a sentence elsewhere that names the main job states no
  duration, and any seed count it states is the page's.
- A docs link to a section of the README names a heading the README has (mkdocs cannot check links that leave
  the site).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ablations.report.run_times import REFERENCE, main_job, runs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
RUN_TIMES = ROOT / "docs" / "run_times.md"

MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
         r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
DATED = re.compile(
    r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b"  # 2026-12-04
    rf"|\b{MONTH}\.?\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?(?:19|20)\d\d\b"  # December 2026, Dec 4, 2026
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}\.?,?\s+(?:19|20)\d\d\b"  # 4 December 2026
    r"|\b(?:this (?:morning|afternoon|evening)|yesterday|today|tonight|last night)\b",
    re.IGNORECASE)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)

DURATION = re.compile(r"\b\d[\d,.]*\s*(?:s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?)\b")
SEEDS = re.compile(r"\b(\d+)(?:\s*(?:to|-|–)\s*(\d+))?\s+(?:quality\s+|curve\s+)?seeds\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[*`])")

README_LINK = re.compile(r"https://github\.com/blockbench/blockbench/blob/main/README\.md#([\w-]+)")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def dated_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) for each line that carries a date, code spans left out."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if DATED.search(CODE_SPAN.sub("", line))]


def sentences(text: str) -> list[str]:
    """The prose of a Markdown page, sentence by sentence (fenced code left out, each paragraph's lines joined)."""
    paragraphs = re.split(r"\n\s*\n", FENCE.sub("", text))
    return [s for p in paragraphs for s in SENTENCE_END.split(" ".join(p.split()))]


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_no_dated_line(page):
    found = dated_lines(page.read_text(encoding="utf-8"))
    assert not found, (f"{rel(page)} has dated lines (put the history in CHANGELOG.md, the measurement in a results "
                       "README or docs/run_times.md): " + "; ".join(f"{n}: {line[:100]}" for n, line in found))


@pytest.mark.parametrize("text,dated", [
    ("measured 2026-12-04 on the VM", True),
    ("in December 2026 it ran", True),
    ("on 4 December 2026", True),
    ("on Dec 4, 2026", True),
    ("as measured this morning", True),
    ("Yesterday's run", True),
    ("GPT-2 (2019) and Llama-2 (2023)", False),
    ("the file `session_vs_af5a22c_2026-12-02.md`", False),
    ("Press et al. 2022, Table 1", False),
])
def test_the_dated_pattern(text, dated):
    assert bool(dated_lines(text)) is dated


@pytest.fixture(scope="module")
def job() -> dict[str, object]:
    return main_job(runs(REFERENCE))


def seed_figures(job: dict[str, object]) -> set[str]:
    """The seed counts the run-times page gives the main job: its quality seeds a point and its curve's seeds."""
    return {str(job["seeds"]).replace(" to ", "-"), str(job["curve seeds"])}


@pytest.mark.parametrize("page", [p for p in PAGES if p != RUN_TIMES], ids=rel)
def test_the_main_job_is_timed_only_on_the_run_times_page(page, job):
    allowed = seed_figures(job)
    for sentence in sentences(page.read_text(encoding="utf-8")):
        if "main job" not in sentence.lower():
            continue
        prose = CODE_SPAN.sub("", sentence)
        assert not DURATION.search(prose), (
            f"{rel(page)} states the main job's run time; link docs/run_times.md instead: {sentence[:160]}")
        for low, high in SEEDS.findall(prose):
            figure = f"{low}-{high}" if high else low
            assert figure in allowed, (f"{rel(page)} gives the main job {figure} seeds, docs/run_times.md "
                                       f"{' or '.join(sorted(allowed))}: {sentence[:160]}")


def test_the_run_times_page_states_the_main_job(job):
    text = RUN_TIMES.read_text(encoding="utf-8")
    assert "## The main job" in text and f"{job['seeds']} quality seeds a" in text


def test_the_main_job_check_catches_a_stated_figure(job):
    bad = "Install and run the main job. The main job takes 1180 s on 2 cores."
    assert [s for s in sentences(bad) if "main job" in s.lower() and DURATION.search(s)]
    assert not DURATION.search("The main job (the norm sweep, +sweep=norm) prints its folder last.")
    assert SEEDS.findall("the main job, 3 to 8 seeds a point") == [("3", "8")]


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_docs_links_to_the_readme_name_its_headings():
    headings = {github_anchor(line.lstrip("#")) for line in README.read_text(encoding="utf-8").splitlines()
                if line.startswith("#")}
    for page in PAGES[1:]:
        for anchor in README_LINK.findall(page.read_text(encoding="utf-8")):
            assert anchor in headings, f"{rel(page)} links README.md#{anchor}; the README has {sorted(headings)}"
