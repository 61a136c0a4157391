"""docs/plugins.md's norm example is the example plugin, and works as the page says: the page's copy of the module
is ``examples/blockbench-scalenorm``'s file; from the plugin's top folder, ``PYTHONPATH=src`` with
``plugins=blockbench_scalenorm`` composes ``norm=scalenorm`` (without ``src/`` on the path, or given a path, it stops
with the one line the page quotes); and the example's own tests (a float64 reference, a block built and trained,
``blockbench.testing.check_choice``) pass with the plugin loaded the way ``plugins=`` loads it, through
``$BLOCKBENCH_PLUGINS``. Each runs in a child process, so this one's declarations stay blockbench's own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ablations.config import command_start
from ablations.config.errors import UsageError
from blockbench import choice
from components import plugins

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "plugins.md"
EXAMPLE = ROOT / "examples" / "blockbench-scalenorm"
MODULE = EXAMPLE / "src" / "blockbench_scalenorm" / "__init__.py"


def env(**extra: str) -> dict[str, str]:
    """This environment without the plugin variables; blockbench importable from this checkout."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", plugins.ENV, "PYTEST_ADDOPTS")}
    return {**base, "PYTHONPATH": str(ROOT), **extra}


def run(*args: str, cwd: Path = EXAMPLE, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=env(**extra))


def python_blocks(text: str) -> list[str]:
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            j = lines.index("```", i + 1)
            out.append("\n".join(lines[i + 1:j]) + "\n")
            i = j
        i += 1
    return out


def test_the_page_shows_the_example_module_as_it_is():
    shown = [b for b in python_blocks(PAGE.read_text(encoding="utf-8")) if '@NORMS.register("scalenorm")' in b]
    assert shown == [MODULE.read_text(encoding="utf-8")], (
        "docs/plugins.md's norm example differs from examples/blockbench-scalenorm/src/blockbench_scalenorm/"
        "__init__.py: copy the file into the page")


def test_the_page_runs_it_as_it_runs():
    # The page's command, from the plugin's top folder; --cfg job composes and prints instead of measuring.
    text = PAGE.read_text(encoding="utf-8")
    command = "PYTHONPATH=src python -m ablations norm=scalenorm profile=smoke plugins=blockbench_scalenorm"
    assert command in text and "cd examples/blockbench-scalenorm" in text
    src = f"{EXAMPLE / 'src'}{os.pathsep}{ROOT}"
    proc = run("-m", "ablations", "norm=scalenorm", "plugins=blockbench_scalenorm", "--cfg", "job", PYTHONPATH=src)
    assert proc.returncode == 0, proc.stderr
    assert "norm:\n  name: scalenorm\n  eps: 1.0e-05\n" in proc.stdout
    # Without src/ on the path the src/ layout is not found: the one line the page quotes, exit status 2.
    proc = run("-m", "ablations", "norm=scalenorm", "plugins=blockbench_scalenorm", "--cfg", "job")
    said = ("blockbench run: error: plugin blockbench_scalenorm failed to import: ModuleNotFoundError: No module named "
            "'blockbench_scalenorm'")
    assert proc.returncode == 2 and proc.stderr.strip() == said and f"`{said}`" in text


def test_plugins_takes_module_names_not_paths():
    with pytest.raises(UsageError) as err:
        command_start.parse("src/blockbench_scalenorm")
    said = "plugins=src/blockbench_scalenorm: 'src/blockbench_scalenorm' is not a module name"
    assert str(err.value) == said and said in PAGE.read_text(encoding="utf-8")


def test_the_example_passes_its_own_tests_loaded_as_plugins_loads_it(tmp_path):
    # src/ on the path and the module named in $BLOCKBENCH_PLUGINS: what `PYTHONPATH=src ... plugins=` leaves. The
    # child's temporary folders are its own: a session numbered beside this one would rotate out the oldest folder of
    # the shared root, which another worker of this run may still be writing in.
    proc = run("-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'child'}", "tests",
               PYTHONPATH=f"{EXAMPLE / 'src'}{os.pathsep}{ROOT}", **{plugins.ENV: "blockbench_scalenorm"})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"^\d+ passed in ", proc.stdout, re.M), proc.stdout[-2000:]  # nothing skipped, failed or in error
    # This process never loaded it: the child did.
    assert "scalenorm" not in choice("norm").values
