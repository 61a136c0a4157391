"""The user's config folder (``$BLOCKBENCH_HOME``): ``blockbench calibrate`` writes there and never into the package,
every reader of ``hardware`` and ``model`` entries finds the user's (Hydra's ``run`` and ``predict``, ``full-size``,
the report's calibration), a name in both is the user's and says so once, and a bad folder is one line.
Nothing is measured: the calibration's measuring function is replaced."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from ablations import cli
from ablations.config import paths
from ablations.config.paths import conf_dir, home_dir
from ablations.predict import __main__ as predict
from ablations.predict import calibrate, full_size_tables
from ablations.report import roofline
from ablations.results import durable
from ablations.roofline.hardware import load_hardware
from ablations.sweep import run as sweep_run
from ablations.sweep.report_inputs import report_inputs

ONE_LINE = "blockbench {command}: error: {key}: {problem}"


def entry(name: str, **changes: object) -> dict:
    """A hardware entry as calibrate writes one: the package's H200 with ``changes`` (plain floats, no Hydra)."""
    h200 = dataclasses.asdict(full_size_tables.device("h200"))
    return h200 | {"name": name, "matmul_efficiency": [list(p) for p in h200["matmul_efficiency"]]} | changes


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty user folder for this test, and a process that has printed no shadowing note yet."""
    folder = tmp_path / "home"
    monkeypatch.setenv(paths.HOME_ENV, str(folder))
    monkeypatch.setattr(paths, "_noted", set())
    return folder


def put(home: Path, group: str, name: str, content: dict) -> Path:
    path = home / group / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


@pytest.fixture
def no_measuring(monkeypatch) -> list[int]:
    """Calibrate's measuring replaced by a made-up entry; the list counts the calls."""
    calls: list[int] = []

    def measured(rounds: int) -> dict:
        calls.append(rounds)
        return entry("this_machine", peak_flops=1.25e12, dtype="float16", source="made up by the test")

    monkeypatch.setattr(calibrate, "calibrate", measured)
    return calls


def package_files() -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in conf_dir().rglob("*") if p.is_file()}


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(paths.HOME_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert home_dir() == tmp_path / "xdg" / "blockbench"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/xdg")  # the XDG specification ignores a relative one
    assert home_dir() == tmp_path / ".config" / "blockbench"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert home_dir() == tmp_path / ".config" / "blockbench"
    assert paths.home_key() == f"BLOCKBENCH_HOME (unset: {tmp_path / '.config' / 'blockbench'})"


def test_calibrate_writes_the_user_folder_and_never_the_package(home, no_measuring, capsys):
    before = package_files()
    assert calibrate.main(["--rounds", "1"]) == 0
    out = home / "hardware" / "this_machine.yaml"
    assert capsys.readouterr().out.strip() == str(out)
    assert no_measuring == [1] and package_files() == before
    assert out.read_text().startswith("# This machine, measured by python -m ablations.predict.calibrate")
    # Every reader now takes the user's calibration over the package's (the reference machine's), and says so.
    assert load_hardware("this_machine").peak_flops == 1.25e12
    assert report_inputs().calibration["source"] == "made up by the test"  # what a sweep records for its report
    assert full_size_tables.device("this_machine").source == "made up by the test"  # Hydra's, as predict composes it
    assert capsys.readouterr().err == (f"blockbench: note: hardware/this_machine.yaml in {home} replaces the "
                                       "package's of the same name (the user's folder wins)\n")


def test_without_a_user_entry_the_package_serves(home):
    assert not home.exists() and load_hardware("this_machine").dtype == "float32"  # the shipped reference machine
    assert roofline.calibration(report_inputs()) == load_hardware("this_machine")


def test_a_user_hardware_entry_resolves_in_every_command(home, capsys):
    put(home, "hardware", "mybox", entry("mybox", peak_flops=2.5e12, source="my own box"))
    assert "mybox" in predict.options("hardware")
    # predict's composition (its table, seconds of kernel counting per model, is tested in tests/predict)
    assert predict.load(["hardware=mybox"]).hardware.source == "my own box"
    assert full_size_tables.device("mybox").peak_flops == 2.5e12  # full-size composes through predict's Hydra config
    assert load_hardware("mybox").source == "my own box"  # the report's reader
    assert predict.main(["--help"]) == 0
    assert "mybox" in next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("hardware: "))


MODEL = {"defaults": ["/model_schema@_here_"], "d_model": 96, "n_layers": 2, "n_heads": 4, "max_seq_len": 4096,
         "vocab_size": 256, "tie_embeddings": True, "gqa_kv_heads": 2}


def test_a_user_model_entry_resolves_for_the_run_and_predict(home, monkeypatch, capsys):
    put(home, "model", "mymodel", MODEL)
    assert len(cli.plan_run(["model=mymodel", "profile=smoke", "+sweep=norm"])) == 2  # the main app's every point
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main() hands its arguments to Hydra through sys.argv
    assert cli.main(["model=mymodel", "--cfg", "job"]) == 0  # @hydra.main's own composition prints the config
    assert yaml.safe_load(capsys.readouterr().out)["model"]["d_model"] == 96
    with initialize_config_dir(config_dir=str(cli.CONF_DIR), version_base="1.3"):
        assert compose("config", overrides=["model=mymodel"]).model.d_model == 96
    assert predict.load(["model=mymodel"]).model.d_model == 96


def test_a_name_in_both_is_the_users_and_says_so_once(home, capsys):
    put(home, "hardware", "h100_sxm", entry("mine"))
    put(home, "model", "small", MODEL)
    for _ in range(2):
        assert predict.load([]).hardware.name == "mine"  # predict's default hardware is h100_sxm
        assert load_hardware("h100_sxm").name == "mine"
    with initialize_config_dir(config_dir=str(cli.CONF_DIR), version_base="1.3"):
        assert compose("config").model.d_model == 96  # the run's default model is small
    assert capsys.readouterr().err == (f"blockbench: note: hardware/h100_sxm.yaml, model/small.yaml in {home} replace "
                                       "the package's of the same name (the user's folder wins)\n")


ALLOWED = "allowed: a folder holding hardware/ and model/ entries"


def bad_home(kind: str, home: Path, monkeypatch) -> str:
    """Make ``home`` bad in one way; the problem its line names."""
    if kind == "a file":
        home.write_text("not a folder\n")
        return f"is not a folder; {ALLOWED}"
    put(home, "norm", "mine", {"name": "layernorm"})
    return f"holds norm/mine.yaml, which blockbench does not read there; {ALLOWED} (group/name.yaml)"


@pytest.mark.parametrize("kind", ["a file", "foreign YAML"])
def test_a_bad_folder_is_one_line_for_every_command(kind, home, monkeypatch, capsys, no_measuring):
    key = f"BLOCKBENCH_HOME={home}"
    problem = bad_home(kind, home, monkeypatch)
    commands = {"predict": lambda: predict.main([]), "calibrate": lambda: calibrate.main([]),
                "run": lambda: cli.main(["profile=smoke"])}
    monkeypatch.setattr(sweep_run, "make_folder", lambda folder: pytest.fail("the run started"))
    for name, run in commands.items():
        assert run() == 2
        assert capsys.readouterr().err.splitlines() == [ONE_LINE.format(command=name, key=key, problem=problem)]
    assert no_measuring == []  # refused before the minutes of measuring


def test_a_folder_that_refuses_writes_is_one_line_before_measuring(home, monkeypatch, capsys, no_measuring):
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    # Root writes anywhere: the refusal is injected where the check writes.
    monkeypatch.setattr(durable.tempfile, "NamedTemporaryFile", refuse)
    assert calibrate.main([]) == 2
    assert capsys.readouterr().err.splitlines() == [ONE_LINE.format(
        command="calibrate", key=f"BLOCKBENCH_HOME={home}", problem="cannot write in the output folder "
                                                                    "(Permission denied)")]
    assert no_measuring == [] and not home.exists()  # the check removed the folders it made


def test_a_folder_under_a_file_is_one_line(tmp_path, monkeypatch, capsys, no_measuring):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(paths.HOME_ENV, str(tmp_path / "file" / "home"))
    assert calibrate.main([]) == 2
    assert capsys.readouterr().err.splitlines() == [ONE_LINE.format(
        command="calibrate", key=f"BLOCKBENCH_HOME={tmp_path / 'file' / 'home'}",
        problem="cannot create the output folder (Not a directory)")]
    assert no_measuring == []
