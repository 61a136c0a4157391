"""``python -m ablations --help`` names the app, lists every sweep with a line (and only the sweeps that exist),
and lists the groups without schema nodes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ablations.cli import CONF_DIR
from ablations.config.generated_sweeps import file_sweeps
from ablations.config.generated_sweeps import sweeps as generated_sweeps
from ablations.config.generated_variants import all_variants
from blockbench import choices
from components.baselines import BASELINES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def help_text() -> str:
    proc = subprocess.run([sys.executable, "-m", "ablations", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout


def section(text: str, title: str) -> list[str]:
    """The lines under ``== <title>... ==`` up to the next blank line."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"== {title}"))
    block = lines[start + 1:]
    return block[: block.index("")] if "" in block else block


def test_help_names_the_app(help_text):
    assert help_text.splitlines()[0] == "blockbench run (python -m ablations)"
    assert "powered by Hydra" not in help_text


def test_help_lists_each_sweep_once_with_what_it_runs(help_text):
    sweeps = [re.match(r"\s+(\w+)\s+(\S.*)$", ln) for ln in section(help_text, "Sweeps")]
    assert all(sweeps), section(help_text, "Sweeps")
    files = {p.stem for p in (CONF_DIR / "sweep").glob("*.yaml")}
    generated = {s.name for s in generated_sweeps()}
    assert sorted(m.group(1) for m in sweeps) == sorted(files | generated)
    assert not files & generated
    assert all(file_sweeps().values()), "a sweep file without its '# help:' line"


def test_help_lists_every_declared_choice_with_its_values(help_text):
    lines = dict(re.match(r"\s+(\w+)\s+(\S.*)$", ln).groups() for ln in section(help_text, "Design choices"))
    assert list(lines) == [choice.group for choice in choices()]
    for choice in choices():
        assert all(v in lines[choice.group] for v in choice.values), choice.group


def test_help_groups_are_the_conf_folders_and_generated_variants_without_schema_nodes(help_text):
    groups = dict(ln.split(": ", 1) for ln in section(help_text, "Configuration groups"))
    folders = {p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name != "hydra"}
    # ``baseline`` is generated whole (one option per block a point can be paired with): no folder.
    assert set(groups) == folders | {"baseline"}
    generated = {"variant": {v.name for v in all_variants()}, "sweep": {s.name for s in generated_sweeps()},
                 "baseline": set(BASELINES)}
    for group, options in groups.items():
        files = {p.stem for p in (CONF_DIR / group).glob("*.yaml")}
        assert options.split(", ") == sorted(files | generated.get(group, set())), group
    for choice in choices():  # every value of every declared choice has its config file
        assert set(groups[choice.group].split(", ")) == set(choice.values), choice.group
    assert "_schema" not in help_text


def test_help_into_a_closed_pipe_says_nothing(tmp_path):
    # `python -m ablations --help | head -1`: the reader is gone before the help is written.
    proc = subprocess.Popen([sys.executable, "-m", "ablations", "--help"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert err == ""
