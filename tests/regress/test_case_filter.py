"""``-k PATTERN`` matches whole path segments of a case's name (``component/variant/mode``): ``norm/`` selects the
norms' cases and never ``block/qknorm/*``; every documented pattern selects what it did when ``-k`` took substrings;
a pattern that matches nothing says how to ask for a part of a segment. No case is timed."""

from __future__ import annotations

import fnmatch

import pytest

from ablations.regress import cli
from ablations.regress.cases import all_cases, matches, select

NAMES = [case.name for case in all_cases()]


def old_filter(pattern: str) -> set[str]:
    """What ``-k`` selected before: a glob over the whole name, or a substring without wildcards."""
    if any(ch in pattern for ch in "*?["):
        return {n for n in NAMES if fnmatch.fnmatch(n, pattern)}
    return {n for n in NAMES if pattern in n}


def selected(*patterns: str) -> set[str]:
    return {case.name for case in select("default", patterns)}


@pytest.mark.parametrize("pattern", ["norm/", "norm", "/norm", "/norm/"])
def test_norm_selects_the_norm_cases_and_never_qknorm_or_rmsnorm_blocks(pattern):
    assert "block/qknorm/forward" in NAMES and "block/rmsnorm/forward" in NAMES  # what substrings caught
    assert selected(pattern) == {n for n in NAMES if n.startswith("norm/")} != set()
    assert "block/qknorm/forward" in old_filter("norm/")  # the fault: the substring filter took it


def test_a_segment_matches_wherever_it_lies_in_the_name():
    # A block variant named ``norm`` (none exists today) would be selected by ``norm/``, as the rule says.
    assert matches("block/norm/forward", "norm/") and matches("norm/rmsnorm/train", "norm/")
    assert not matches("block/qknorm/forward", "norm/") and not matches("block/rmsnorm/forward", "norm")
    # The pattern's segments must be consecutive segments of the name, in order.
    assert matches("block/gpt2/forward", "gpt2/forward") and not matches("block/gpt2/forward", "block/forward")
    assert not matches("block/gpt2/forward", "forward/gpt2")
    # An empty segment matches no segment; a pattern of no segment matches nothing.
    assert not matches("block/gpt2/forward", "block//forward")
    assert not any(matches("block/gpt2/forward", p) for p in ("", "/", "//"))


def test_globs_stay_within_one_segment():
    assert selected("*norm*") == {n for n in NAMES if any("norm" in s for s in n.split("/"))}
    assert selected("gqa?") == {n for n in NAMES if n.split("/")[1] in ("gqa2", "gqa4")}
    assert selected("block*forward") == set()  # * never crosses a /: no one segment is like that
    assert selected("block/*") == {n for n in NAMES if n.startswith("block/")}


@pytest.mark.parametrize("pattern", [
    "block",                 # docs/regression.md, the command's docstring, scripts/regress_power.py
    "block/*/forward",       # docs/regression.md's power runs
    "block/gpt2",            # scripts/regress_power.py
    "block/gpt2/forward",    # scripts/regress_power.py's calibration
    "block/llama2",          # tests/regress/test_regress.py
    "norm/*/train",
    "norm/rmsnorm/forward",  # tests/benchmarks/test_regress_catches.py
    "*/mha-w64/forward",     # tests/regress/test_comparable.py
    "forward",               # tests/ablations/test_plugin_install.py
])
def test_every_documented_pattern_selects_what_it_did(pattern):
    assert selected(pattern) == old_filter(pattern) != set()


def test_star_around_a_pattern_is_the_old_substring_match():
    for pattern in ("llama", "norm/", "k/llama2/f", "rms", "gqa"):
        assert selected(f"*{pattern}*") == old_filter(pattern), pattern


def test_a_pattern_that_is_only_part_of_a_segment_matches_nothing_and_says_how_to_ask(capsys):
    assert selected("llama") == set()
    assert cli.main(["HEAD", "-k", "llama"]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("blockbench regress: error: -k llama matches no case of --cases default; -k matches "
                           "whole segments of a name, so for a part of one: -k '*llama*' (names look like")
    assert captured.out == ""


def test_a_pattern_that_matches_nothing_beside_others_that_do_is_named(capsys):
    assert cli.main(["--list", "-k", "block/gpt2", "-k", "llama"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split() == ["block/gpt2/forward", "block/gpt2/train", "block/gpt2/decode"]
    assert captured.err.strip() == ("blockbench regress: -k llama matches no case of --cases default; -k matches "
                                    "whole segments of a name, so for a part of one: -k '*llama*'")


def test_the_help_states_the_rule(capsys):
    with pytest.raises(SystemExit):
        cli.parse(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "PATTERN in whole segments: PATTERN split on / must match that many consecutive segments" in text
    assert "norm/ or norm selects norm/*/* and never block/qknorm/*" in text
