"""The report reads rows and what the sweep recorded beside them, never the configuration: no report module imports
a configuration reader (the import graph, every import statement of every module, function bodies included); a
sweep records the inputs before its first point; a folder without them is one line naming the command that writes
them; and the recorded inputs, not this checkout's configuration, are what the report prints."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from ablations.report.__main__ import main as report_main
from ablations.results.report_inputs import RECORD, read_report_inputs, write_report_inputs
from tests.report.conftest import recorded_inputs

REPORT = Path(__file__).resolve().parents[2] / "ablations" / "report"
# What reads configuration: Hydra, OmegaConf and YAML files, and every module of ``ablations.config`` but the two
# that hold none (the rows' column names, the error types).
READERS = ("hydra", "omegaconf", "yaml", "ablations.config")
NOT_CONFIGURATION = ("ablations.config.columns", "ablations.config.errors")
# Functions elsewhere that open the configuration's files.
READING_NAMES = {"conf_dir", "conf_entry", "load_hardware", "compose", "initialize_config_dir"}


def imports(path: Path) -> list[tuple[str, str | None]]:
    """Every (module, name) a module imports, at its top and inside its functions; ``name`` None for ``import m``."""
    package = "ablations.report"
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # a relative import, resolved against the report package
                module = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], module]).strip(".")
            found += [(module, alias.name) for alias in node.names]
    return found


def configuration_imports(path: Path) -> list[str]:
    bad = []
    for module, name in imports(path):
        reader = any(module == r or module.startswith(r + ".") for r in READERS)
        if (reader and module not in NOT_CONFIGURATION) or name in READING_NAMES:
            bad.append(f"{module}.{name}" if name else module)
    return bad


def test_no_report_module_imports_configuration():
    modules = sorted(REPORT.glob("*.py"))
    assert len(modules) > 30
    found = {p.name: configuration_imports(p) for p in modules}
    assert {name: bad for name, bad in found.items() if bad} == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    """The check can fail: an import a function makes, the way the old published margin read its YAML file."""
    module = tmp_path / "reads.py"
    module.write_text("def margin():\n    from omegaconf import OmegaConf\n\n    from ablations.config.paths import "
                      "conf_dir\n    return OmegaConf.load(conf_dir() / 'train' / 'default.yaml').target_mde\n")
    assert configuration_imports(module) == ["omegaconf.OmegaConf", "ablations.config.paths.conf_dir"]
    fine = tmp_path / "fine.py"
    fine.write_text("from ablations.config.columns import row_columns\n"
                    "from ablations.roofline.hardware import Hardware\n")
    assert configuration_imports(fine) == []


def test_a_folder_without_its_inputs_is_one_line_naming_the_command(synthetic, tmp_path, capsys):
    folder = tmp_path / "old"
    folder.mkdir()
    synthetic(quality=False, failed=False).to_csv(folder / "results.csv", index=False)
    assert report_main([str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and RECORD in err and "python -m ablations.sweep.report_inputs" in err
    assert not (folder / "REPORT.md").exists()


def test_the_report_prints_the_recorded_inputs_not_this_checkouts(synthetic, tmp_path):
    """A margin and a full-size ratio changed in the record change the report; the configuration is not read."""
    from ablations.report.markdown import build_report
    from ablations.report.published import NONE, agreement

    inputs = recorded_inputs()
    assert inputs.no_worse_margin == 0.02 and inputs.train_step_ratios  # conf/train/default.yaml's target_mde
    moved = dataclasses.replace(inputs, no_worse_margin=0.5,
                                train_step_ratios={k: 2 * v for k, v in inputs.train_step_ratios.items()})
    folder = tmp_path / "sweep"
    folder.mkdir()
    write_report_inputs(folder, moved)
    assert read_report_inputs([tmp_path / "none", folder]) == moved  # the first folder holding one
    table = synthetic(sweeps=("norm", "kv", "pos"))
    text = build_report(folder, table, draw_figures=False).read_text()
    assert "within ±0.5" in text and "within ±0.02" not in text
    # A published "no worse" agrees with a Δ whose upper end lies within the recorded margin, not the configured one.
    assert agreement("no worse", NONE, 0.3, moved.no_worse_margin) == "agrees"
    assert agreement("no worse", NONE, 0.3, inputs.no_worse_margin) == "not shown"
