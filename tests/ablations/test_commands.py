"""``blockbench``: one command with a subcommand per tool, each the same ``main`` as its ``python -m`` form; one
error line for all of them; and every ``python -m`` and ``blockbench`` command the README shows exists."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ablations import commands
from ablations.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "results" / "reference" / "README.md"]


def dispatch(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = commands.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_help_lists_every_command_once_with_one_line(capsys):
    status, out, err = dispatch(["--help"], capsys)
    assert status == 0 and err == ""
    listed = [m.group(1) for m in (re.match(r"  (\S+)  +\S", ln) for ln in out.splitlines()) if m]
    assert listed == list(COMMANDS)


@pytest.mark.parametrize("argv,problem", [(["nope"], "unknown command 'nope'"), ([], "a command is required")])
def test_an_unknown_or_missing_command_is_one_line_naming_the_allowed_ones(argv, problem, capsys):
    status, out, err = dispatch(argv, capsys)
    assert status == 2 and out == ""
    assert err.splitlines() == [f"blockbench: error: {problem}; allowed: {', '.join(COMMANDS)} "
                                "(blockbench --help says what each does)"]


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_is_its_modules_main_under_its_own_name(name):
    main = importlib.import_module(COMMANDS[name].module).main
    assert main.command == name  # the name its error line says (ablations.config.errors.command)


@pytest.mark.parametrize("name", [n for n, command in COMMANDS.items() if command.module != "ablations.cli"])
def test_each_command_has_its_own_help(name, capsys, monkeypatch):
    monkeypatch.setenv("BLOCKBENCH_MALLOC", "off")  # regress would start itself once more
    try:
        status = commands.main([name, "--help"])
    except SystemExit as stop:  # argparse's --help
        status = stop.code
    out = capsys.readouterr().out
    assert status == 0 and out.strip()
    assert name == "predict" or out.startswith(f"usage: blockbench {name} ")


def test_run_help_is_hydras_with_the_sweeps():
    proc = subprocess.run([sys.executable, "-m", "ablations.commands", "run", "--help"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines()[0] == "blockbench run (python -m ablations)" and "== Sweeps" in proc.stdout


@pytest.mark.parametrize("argv,line", [
    (["report", "{tmp}/nope"], "blockbench report: error: {tmp}/nope is not a folder"),
    (["compare", "{tmp}/a.csv", "{tmp}/b.csv"], "blockbench compare: error: {tmp}/a.csv: no such file or folder"),
    (["repeat", "{tmp}/a.csv", "{tmp}/b.csv"], "blockbench repeat: error: {tmp}/a.csv: no such file or folder"),
    (["quality", "{tmp}/nope"], "blockbench quality: error: {tmp}/nope: no such file or folder"),
    (["predict", "hardware=h1000"], "blockbench predict: error: hardware='h1000' is not known; allowed: "),
    (["regress", "HEAD", "--rounds", "3"], "blockbench regress: error: --rounds=3 must be at least 6"),
])
def test_bad_input_is_one_line_in_one_format_and_exit_2(argv, line, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BLOCKBENCH_MALLOC", "off")
    status, out, err = dispatch([a.format(tmp=tmp_path) for a in argv], capsys)
    assert status == 2 and out == ""
    [only] = err.splitlines()
    assert only.startswith(line.format(tmp=tmp_path)), only


def test_the_run_command_through_blockbench_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "ablations.commands", "run", "+sweep=norm", "model.d_model=1000",
                           f"hydra.sweep.dir={tmp_path}"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["blockbench run: error: model.d_model=1000 must be divisible by "
                                        "model.n_heads=16"]


def shown(pattern: str) -> set[str]:
    return {m for doc in DOCS for m in re.findall(pattern, doc.read_text(), re.MULTILINE)}


def test_every_python_m_command_the_readme_shows_resolves():
    modules = shown(r"python -m (ablations[\w.]*)")
    assert {"ablations", "ablations.report", "ablations.regress", "ablations.predict"} <= modules
    for module in sorted(modules):
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"python -m {module}: no such module"
        if spec.submodule_search_locations is not None:  # a package runs its __main__
            assert importlib.util.find_spec(f"{module}.__main__") is not None, f"python -m {module}: no __main__"


def test_every_blockbench_command_the_readme_shows_exists():
    named = shown(r"(?:^|`)blockbench ([a-z][\w-]*)")
    assert {"compare", "repeat", "sizes"} <= named
    assert named - {"COMMAND"} <= set(COMMANDS)
