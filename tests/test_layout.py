"""The pipeline's layout stays true: no import cycle in ``ablations/``, ``components/`` or ``blockbench/`` (type-only
ones included), and every stage imports only the
stages below it (config <- results <- quality <- measure <- report, measure timing the quality model's training
step; tools read results; the entry modules on top, and nothing imports the CLI; ``config.errors`` and
``config.paths`` below everything, ``paths`` on ``errors``); the top level holds only the entry points and the
runner."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from scripts import structure
from scripts.structure import cycles

ROOT = Path(__file__).resolve().parent.parent / "ablations"

# The top level of ``ablations``: the entry points (``__main__``, ``cli``, ``commands``, ``step_profile``) and the
# runner. With each stage's ``__main__`` and the ``sweep`` package (which composes, runs and ends a sweep through the
# runner) they are the entry layer, which may import any stage.
TOP_LEVEL = {"__init__", "__main__", "cli", "commands", "runner", "step_profile"}
ENTRY_PACKAGES = {"sweep"}
# What each stage may import from ``ablations`` (itself always).
ALLOWED = {
    "config": set(),
    # config: where ``conf/`` is (``config.paths``), for the hardware entries.
    "roofline": {"config"},
    "results": {"config"},
    # quality: the quality model's training step, timed paired beside the block's (measure.quality_step).
    "measure": {"config", "results", "roofline", "quality"},
    # roofline: the work model's training FLOPs per step of each arm (the compute multiplier's FLOPs).
    "quality": {"config", "results", "roofline"},
    "report": {"config", "results", "measure", "quality", "roofline"},
    "tools": {"config", "results"},
    "track": {"config", "results", "report"},
    "regress": {"config", "results", "measure"},
    "predict": {"config", "results", "measure", "roofline", "report", "quality"},
}
# Below every stage, and importable from each: the commands' one error type and line (``errors``) and where
# ``conf/`` and the user's folder are (``paths``). Each imports nothing of ``ablations`` but what is listed here:
# a bad user folder is a usage error.
FOUNDATION = {"ablations.config.errors": set(), "ablations.config.paths": {"ablations.config.errors"}}
# Named in the layout issue: the directions that must never appear, whatever ALLOWED grows into.
FORBIDDEN = [("quality", "measure"), ("measure", "report"), ("roofline", "measure"), ("report", "predict")]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Every ``ablations`` module's imports of ``ablations`` modules, at module level or inside a function."""
    return structure.import_graph(root.parent, (root.name,))[1]


def stage(module: str, importing: bool = True) -> str:
    """``ablations.measure.point`` -> ``measure``; top-level modules are the ``entry`` layer, and so is every
    ``__main__`` (a command) when it is the one importing."""
    parts = module.split(".")
    if importing and parts[-1] == "__main__" or len(parts) > 2 and parts[1] in ENTRY_PACKAGES:
        return "entry"
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ALLOWED) else "entry"


def violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for src, targets in graph.items():
        for dst in targets:
            s, d = stage(src), stage(dst, importing=False)
            if src in FOUNDATION:
                if dst not in FOUNDATION[src]:
                    bad.append(f"{src} -> {dst}: {src} must import nothing of ablations"
                               f"{f' but {sorted(FOUNDATION[src])}' if FOUNDATION[src] else ''}")
            elif dst in FOUNDATION:
                continue
            elif dst.endswith(".cli") and not src.endswith(".__main__"):
                bad.append(f"{src} -> {dst}: nothing but __main__ imports the CLI")
            elif s != "entry" and s != d and d not in ALLOWED[s]:
                bad.append(f"{src} -> {dst}: {s} may import only {sorted(ALLOWED[s]) or 'nothing'} of ablations")
            for fs, fd in FORBIDDEN:
                if (s, d) == (fs, fd):
                    bad.append(f"{src} -> {dst}: {fs} -> {fd} is forbidden")
    return sorted(set(bad))


def test_no_import_cycle_in_ablations():
    assert cycles(import_graph(ROOT)) == []


def test_no_import_cycle_in_any_package_type_only_ones_included():
    """Across ``ablations``, ``components`` and ``blockbench``, every import counted, one under ``TYPE_CHECKING`` or
    inside a function too: a module typed by another that imports it names that one by a ``Protocol`` instead
    (``components.choice.Arch``, ``components.declared_set.Declared``, ``components.kv_heads.AttnSetting``)."""
    found = cycles(structure.import_graph(ROOT.parent, ("ablations", "components", "blockbench"))[1])
    assert found == [], [" -> ".join(cycle) for cycle in found]


def test_every_stage_imports_only_the_stages_below_it():
    assert violations(import_graph(ROOT)) == []


def test_the_top_level_holds_only_the_entry_points_and_the_runner():
    assert {p.stem for p in ROOT.glob("*.py")} == TOP_LEVEL


def test_each_stage_is_a_package():
    for name in ALLOWED:
        assert (ROOT / name / "__init__.py").is_file(), name


@pytest.fixture
def broken_tree(tmp_path: Path) -> Path:
    """A miniature ``ablations`` with a cycle (config <-> results) and two forbidden directions."""
    root = tmp_path / "ablations"
    for pkg in ("config", "results", "quality", "measure"):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "cli.py").write_text("")
    (root / "config" / "checks.py").write_text("from ablations.results import rows\n")
    (root / "results" / "rows.py").write_text("def f():\n    from ablations.config.checks import x\n")
    (root / "quality" / "run.py").write_text("from ablations.measure.point import Rows\nimport ablations.cli\n")
    (root / "measure" / "point.py").write_text("")
    # below every stage: imports nothing
    (root / "config" / "errors.py").write_text("from ablations.config import checks\n")
    (root / "config" / "paths.py").write_text("from ablations.config.errors import UsageError\n"
                                              "from ablations.config import checks\n")
    (root / "results" / "table.py").write_text("from ablations.config.errors import UsageError\n")  # allowed anywhere
    return root


def test_the_checks_catch_a_cycle_and_forbidden_imports(broken_tree: Path):
    graph = import_graph(broken_tree)
    assert [set(cycle) for cycle in cycles(graph)] == [{"ablations.config.checks", "ablations.results.rows"}]
    found = "\n".join(violations(graph))
    assert "ablations.quality.run -> ablations.measure.point: quality -> measure is forbidden" in found
    assert "ablations.quality.run -> ablations.cli: nothing but __main__ imports the CLI" in found
    assert "ablations.config.checks -> ablations.results.rows: config may import only nothing" in found
    errors, paths, checks = "ablations.config.errors", "ablations.config.paths", "ablations.config.checks"
    assert f"{errors} -> {checks}: {errors} must import nothing of ablations" in found
    assert f"{paths} -> {checks}: {paths} must import nothing of ablations but ['{errors}']" in found
    assert "ablations.config.paths -> ablations.config.errors" not in found
    assert "ablations.results.table" not in found


# The composed Hydra config stops at the door: the runner resolves it into typed plans (``ablations.config.plan``),
# and only these modules read it: the entry points, the config package's rules and plan, a point's identity (its
# hash is of the resolved config), and the predictor, which composes its own.
DOOR = {"ablations.cli", "ablations.runner", "ablations.sweep.compose", "ablations.sweep.run",
        "ablations.config.checks", "ablations.config.plan", "ablations.results.identity",
        "ablations.predict.__main__", "ablations.predict.quality_seed"}


def test_the_composed_config_stops_at_the_door():
    readers = {structure.module_name(f, ROOT.parent) for f in ROOT.rglob("*.py") if "DictConfig" in f.read_text()}
    assert readers <= DOOR, sorted(readers - DOOR)


def test_a_type_only_cycle_is_a_cycle_of_every_import_not_of_those_at_import(tmp_path: Path):
    """``scripts.structure`` tells a cycle closed only by ``if TYPE_CHECKING:`` (or a function's import) from one
    Python runs into at import."""
    pkg = tmp_path / "components"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from components.norms import NormConfig\n")
    (pkg / "norms.py").write_text("from components.config import ArchConfig\n")
    (pkg / "block.py").write_text("def build():\n    from components import norms\n")
    eager, every = structure.import_graph(tmp_path, ("components",))
    assert cycles(eager) == []
    assert [set(c) for c in cycles(every)] == [{"components.config", "components.norms"}]
    assert every["components.block"] == {"components.norms"} and eager["components.block"] == set()


def test_the_structure_follows_the_config_and_finds_a_name_with_two_meanings():
    """``scripts.structure``: the config followed through calls by position and keyword (not into a call that does
    not pass it), and a parameter name given two of the project's types, ``X | None`` and ``list[X]`` counting as X."""
    source = {
        "pkg.run": "from omegaconf import DictConfig\nclass Plan: ...\nclass Arch: ...\n"
                   "def run_job(cfg: DictConfig):\n    plan_point(cfg)\n    other(1)\n"
                   "def plan_point(c):\n    read(config=c)\n    return Plan()\n"
                   "def read(config):\n    return 1\ndef other(cfg: Arch):\n    return cfg\n",
        "pkg.use": "def work(plan: 'Plan | None', arch: list['Arch']):\n    return plan\n"
                   "def build(plan: 'Plan'):\n    return plan\n",
        # A Protocol is a type's shape, not a meaning of its own: ``cfg: Shape`` adds none.
        "pkg.shape": "from typing import Protocol\nclass Shape(Protocol): ...\n"
                     "def shaped(cfg: Shape):\n    return cfg\n",
    }
    trees = {name: ast.parse(text) for name, text in source.items()}
    reached, depth = structure.config_travel(trees, ("pkg.run", "run_job", "cfg"))
    assert reached == {("pkg.run", "run_job"), ("pkg.run", "plan_point"), ("pkg.run", "read")} and depth == 2
    assert structure.several_meanings(trees) == {"cfg": {frozenset({"DictConfig"}), frozenset({"Arch"})}}


# A module is split by job, not to a line cap: one too short to hold a job of its own joins the module its readers
# read it with. A package's ``__init__`` and a command's ``__main__`` (what ``python -m`` runs) are exempt.
SHORTEST = 30


def test_no_module_is_too_short_to_hold_a_job():
    root = ROOT.parent
    short = [f"{path.relative_to(root)} ({len(path.read_text().splitlines())} lines)"
             for package in ("ablations", "components", "blockbench") for path in sorted((root / package).rglob("*.py"))
             if path.name not in {"__init__.py", "__main__.py"} and len(path.read_text().splitlines()) < SHORTEST]
    assert not short, f"modules under {SHORTEST} lines: merge each into the module its readers use: {short}"
