"""The code's structure in numbers, read from the source alone (nothing is imported or run).

    python -m scripts.structure [ROOT]

Prints, for ``ablations/`` and ``components/`` under ROOT (the repository by default):

- rooms: each package's modules and lines, and every module over the 300-line limit;
- arrows: imports between the pipeline's stages (the subpackages of ``ablations``);
- import cycles, twice: among imports that run when a module is imported, and among every import, including those
  inside functions and under ``if TYPE_CHECKING:`` (a cycle there is a design cycle even when Python tolerates it);
- the composed Hydra config: which modules name ``DictConfig``, and the functions it is passed through from
  ``ablations.runner.run_job`` (argument to parameter, followed through the calls that name the function directly);
- names with more than one meaning: a parameter name annotated with different types in different functions.

Run it on two checkouts (``git worktree add``) to compare a change's structure before and after.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGES = ("ablations", "components")
LIMIT = 300


def module_name(path: Path, root: Path) -> str:
    """``ROOT/ablations/measure/point.py`` -> ``ablations.measure.point``; a package is its ``__init__``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by its dotted name."""
    return {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(imports run at import time, every import) of each module of ``packages``, among those modules."""
    files = sources(root, packages)
    eager, every = {}, {}
    for name, path in files.items():
        eager[name], every[name] = imports(path, name, set(files))
    return eager, every


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(node: ast.Import | ast.ImportFrom, here: str, is_package: bool, known: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if node.level:
        base = here.split(".")[: len(here.split(".")) - node.level + is_package]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    # ``from pkg import sub`` imports the submodule; ``from mod import name`` the module.
    return {f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names}


def imports(path: Path, here: str, known: set[str]) -> tuple[set[str], set[str]]:
    """(imports run at import time, every import) of one module, restricted to ``known`` modules."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    eager: set[str] = set()
    every: set[str] = set()

    def visit(node: ast.AST, at_import: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found = _imported(child, here, is_package, known) & known
                every.update(found)
                if at_import:
                    eager.update(found)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), False)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), at_import)
            else:
                visit(child, at_import)

    visit(tree, True)
    return eager - {here}, every - {here}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import cycle once, as the modules along it (depth-first search with an explicit path)."""
    found: list[list[str]] = []
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycle = path[path.index(node):]
            if set(cycle) not in [set(c) for c in found]:
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


def stage(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "components":
        return "components"
    return parts[1] if len(parts) > 2 else "(entry)"


def rooms(files: dict[str, Path]) -> None:
    sizes: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for name, path in files.items():
        sizes[stage(name) if name.startswith("ablations") else "components"].append(
            (len(path.read_text().splitlines()), name))
    print("## rooms\n\n| package | modules | lines | largest |\n|---|---|---|---|")
    for pkg in sorted(sizes):
        n, biggest = max(sizes[pkg])
        print(f"| {pkg} | {len(sizes[pkg])} | {sum(s for s, _ in sizes[pkg])} | {biggest} ({n}) |")
    over = sorted((n, m) for s in sizes.values() for n, m in s if n > LIMIT)
    print(f"\nmodules over {LIMIT} lines: {len(over)}" + "".join(f"\n- {m} ({n})" for n, m in over))


def arrows(every: dict[str, set[str]]) -> None:
    pairs: dict[tuple[str, str], int] = defaultdict(int)
    for src, dsts in every.items():
        for dst in dsts:
            if stage(src) != stage(dst):
                pairs[stage(src), stage(dst)] += 1
    print(f"\n## arrows between stages: {len(pairs)} stage pairs, {sum(pairs.values())} module imports\n")
    for (s, d), n in sorted(pairs.items()):
        print(f"- {s} -> {d}: {n}")


def print_cycles(eager: dict[str, set[str]], every: dict[str, set[str]]) -> None:
    for label, graph in (("at import", eager), ("every import, type-only and in functions included", every)):
        found = cycles(graph)
        print(f"\nimport cycles ({label}): {len(found)}" + "".join(f"\n- {' -> '.join(c)}" for c in found))


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function and method, each once (two methods of one name in two classes are two)."""
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def config_travel(trees: dict[str, ast.Module], start: tuple[str, str, str] = ("ablations.runner", "run_job", "cfg"),
                  ) -> tuple[set[tuple[str, str]], int]:
    """The functions ``start``'s parameter reaches, passed on by name (positionally or as a keyword) to a function of
    that name in the packages, and how many calls deep it goes."""
    defs: dict[str, list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]] = defaultdict(list)
    for module, tree in trees.items():
        for fn in _functions(tree):
            defs[fn.name].append((module, fn))
    seen: set[tuple[str, str]] = set()
    depth = 0
    frontier = [(m, f, start[2]) for m, f in defs.get(start[1], []) if m == start[0]]
    while frontier:
        nxt = []
        for module, fn, param in frontier:
            if (module, fn.name) in seen:
                continue
            seen.add((module, fn.name))
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                callee = call.func.id if isinstance(call.func, ast.Name) else (
                    call.func.attr if isinstance(call.func, ast.Attribute) else None)
                positions = [i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == param]
                keywords = [k.arg for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id == param]
                for target_module, target in defs.get(callee or "", []):
                    names = [a.arg for a in target.args.posonlyargs + target.args.args]
                    if names and names[0] in ("self", "cls"):
                        names = names[1:]
                    passed = [names[i] for i in positions if i < len(names)] + [k for k in keywords if k]
                    nxt += [(target_module, target, p) for p in passed]
        depth += bool(nxt)
        frontier = nxt
    return seen, depth


def several_meanings(trees: dict[str, ast.Module]) -> dict[str, set[frozenset[str]]]:
    """Each parameter name annotated, in different functions, with more than one of the project's own types (or the
    composed Hydra config): one name for two kinds of thing."""
    # A ``Protocol`` is the shape of a type a module cannot import (``components.choice.Arch``, ArchConfig's): the
    # same kind of thing, so not a meaning of its own.
    own = {n.name for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)
           and not any(isinstance(b, ast.Name) and b.id == "Protocol" for b in n.bases)} | {"DictConfig"}
    # An annotation's own types are one meaning (``list[tuple[AtSize, Flip]]`` is one), ``X | None`` the same as ``X``.
    types: dict[str, set[frozenset[str]]] = defaultdict(set)
    for tree in trees.values():
        for fn in _functions(tree):
            for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
                if a.annotation is None or a.arg in ("self", "cls"):
                    continue
                named = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(a.annotation)
                         if isinstance(n, (ast.Name, ast.Attribute))}
                named |= {n.value for n in ast.walk(a.annotation) if isinstance(n, ast.Constant)
                          and isinstance(n.value, str)}
                if named & own:
                    types[a.arg].add(frozenset(named & own))
    return {name: found for name, found in types.items() if len(found) > 1}


def print_config(files: dict[str, Path], trees: dict[str, ast.Module]) -> None:
    readers = sorted(n for n, p in files.items() if "DictConfig" in p.read_text())
    print(f"\n## the Hydra config\n\nmodules that name DictConfig: {len(readers)}" + "".join(
        f"\n- {r}" for r in readers))
    seen, depth = config_travel(trees)
    print(f"\nfunctions it reaches from ablations.runner.run_job, passed on by name: {len(seen)}, "
          f"{depth} calls deep, in {len({m for m, _ in seen})} modules")
    for m, f in sorted(seen):
        print(f"- {m}.{f}")


def print_meanings(trees: dict[str, ast.Module]) -> None:
    several = several_meanings(trees)
    print(f"\n## parameter names given more than one of the project's types: {len(several)}")
    for n in sorted(several):
        print(f"- {n}: {'; '.join(sorted(' and '.join(sorted(t)) for t in several[n]))}")


def main(argv: list[str]) -> None:
    root = Path(argv[0] if argv else Path(__file__).resolve().parent.parent).resolve()
    files = sources(root)
    eager, every = import_graph(root)
    rooms(files)
    arrows(every)
    print_cycles(eager, every)
    trees = {name: ast.parse(path.read_text(), filename=str(path)) for name, path in files.items()}
    print_config(files, trees)
    print_meanings(trees)


if __name__ == "__main__":
    main(sys.argv[1:])
