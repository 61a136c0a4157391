"""The pipeline's layout stays true: no import cycle in ``ablations/``, and every stage imports only the
stages below it (config <- results <- quality <- measure <- report, measure timing the quality model's training
step; tools read results; the entry modules on top, and nothing imports the CLI; ``config.errors`` and
``config.paths`` below everything, ``paths`` on ``errors``); the top level holds only the entry points and the
runner."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "ablations"

# The top level of ``ablations``: the entry points (``__main__``, ``cli``, ``commands``, ``step_profile``, and
# ``callbacks``, which Hydra calls at the sweep's end) and the runner. With each stage's ``__main__`` they are the
# entry layer, which may import any stage.
TOP_LEVEL = {"__init__", "__main__", "cli", "commands", "callbacks", "runner", "step_profile"}
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


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path, known: set[str]) -> set[str]:
    """Every ``ablations`` module that ``path`` imports, at module level or inside a function."""
    package = root.name
    here = module_name(path, root)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = here.split(".")[: len(here.split(".")) - node.level + (path.name == "__init__.py")]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from pkg import sub`` imports the submodule ``pkg.sub``; ``from mod import name`` the module.
            names = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        found.update(n for n in names if n == package or n.startswith(package + "."))
    found.discard(here)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    files = sorted(root.rglob("*.py"))
    known = {module_name(f, root) for f in files}
    return {module_name(f, root): imports_of(f, root, known) & known for f in files}


def stage(module: str, importing: bool = True) -> str:
    """``ablations.measure.point`` -> ``measure``; top-level modules are the ``entry`` layer, and so is every
    ``__main__`` (a command) when it is the one importing."""
    parts = module.split(".")
    if importing and parts[-1] == "__main__":
        return "entry"
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ALLOWED) else "entry"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import cycle once, as the modules along it (depth-first search with an explicit path)."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycle = path[path.index(node):]
            if set(cycle) not in [set(cycle_found) for cycle_found in found]:
                found.append(cycle + [node])
            return
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])
        done.add(node)

    for start in sorted(graph):
        visit(start, [])
    return found


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
DOOR = {"ablations.cli", "ablations.runner", "ablations.callbacks", "ablations.config.checks",
        "ablations.config.variants", "ablations.config.plan", "ablations.results.identity",
        "ablations.predict.__main__", "ablations.predict.quality_seed"}


def test_the_composed_config_stops_at_the_door():
    readers = {module_name(f, ROOT) for f in ROOT.rglob("*.py") if "DictConfig" in f.read_text()}
    assert readers <= DOOR, sorted(readers - DOOR)
