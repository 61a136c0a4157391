"""A plugin as a user installs it: blockbench's wheel and the example plugin's wheel in a fresh environment; from an
empty folder, a smoke sweep, its report, a prediction and the plugin author's regression check each take the
plugin's choices (``ffn=relu2``, ``softcap=on``), found through its entry point alone.

The environment is built as ``test_install.py`` builds it (blockbench's wheel, this environment's third-party
packages on its path); the uninstalled copy through ``plugins=`` is ``test_plugins.py``'s (default tier).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.ablations.test_install import build_wheel, install_wheel, make_venv, sh

# The extended tier: two wheels, an environment and four commands are a few minutes on 2 cores.
pytestmark = [pytest.mark.slow, pytest.mark.extended]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blockbench-relu2-softcap"
PLUGIN = "blockbench-relu2-softcap==0.1.0"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("plugin-install")
    env_dir = make_venv(tmp)
    plugin = tmp / "plugin-src"
    shutil.copytree(EXAMPLE, plugin, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"))
    install_wheel(env_dir, build_wheel(plugin, tmp / "plugin-dist"))
    return env_dir


@pytest.fixture
def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "BLOCKBENCH_PLUGINS")}


def test_the_installed_plugin_takes_part_in_every_command(venv, env, tmp_path):
    blockbench = venv / "bin" / "blockbench"
    work = tmp_path / "empty"
    work.mkdir()
    sh(blockbench, "run", "-m", "variant=gpt2,relu2,softcap", "profile=smoke", "model=tiny", "threads=1",
       "hydra.sweep.dir=out", cwd=work, env=env, timeout=600)
    table = pd.read_csv(work / "out" / "results.csv")
    assert set(table["variant"]) == {"gpt2", "relu2", "softcap"}
    assert set(table["plugins"]) == {PLUGIN}  # every row records the plugin and its version
    assert set(table.loc[table["variant"] == "softcap", "softcap"]) == {"on"}

    out = sh(blockbench, "report", "out", cwd=work, env=env)
    report = Path(out.strip()).read_text()
    assert "| relu2 |" in report and "| softcap |" in report and "Soft-capping the attention logits" in report

    predicted = sh(blockbench, "predict", cwd=work, env=env)
    assert "| relu2 | gpt2 |" in predicted and "| softcap | gpt2 |" in predicted

    # The plugin's author: its checkout under git, a change in the working tree, compared with its HEAD.
    checkout = tmp_path / "checkout"
    shutil.copytree(EXAMPLE, checkout, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1"]):
        sh("git", *args, cwd=checkout)
    relu2 = checkout / "src" / "blockbench_relu2_softcap" / "relu2.py"
    relu2.write_text(relu2.read_text() + "\n# a change the check times\n")
    regress = sh(blockbench, "regress", "HEAD", "--no-callgrind", "--rounds", "6", "--min-run-time", "0.002",
                 "-k", "forward", "--threshold", "50", "--out", tmp_path / "regress", cwd=checkout, env=env)
    cases = {line.split("`")[1] for line in regress.splitlines() if line.startswith("| `")}
    assert cases >= {"ffn/relu2/forward", "block/relu2/forward", "block/softcap/forward"}
    assert not any(case.startswith(("norm/", "block/rmsnorm")) for case in cases)  # the plugin's cases alone by default
    assert sorted(p.name for p in work.iterdir()) == ["out"]  # nothing written beside the sweep
