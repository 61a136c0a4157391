"""Install anywhere: the wheel, installed (not editable) into a fresh virtual environment, runs a smoke sweep, its
report and a prediction from an empty folder, with ``conf/`` read from the installed package.

The fresh environment gets this one's third-party packages (torch, Hydra, pandas ...) through a ``.pth`` line,
not a second copy; ``ablations`` and ``components`` come from the wheel alone (a ``.pth`` line adds a folder
to the path without running the editable install's finder there).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pandas as pd
import pytest

# The extended tier: building and installing the wheel into a fresh environment is most of a minute.
pytestmark = [pytest.mark.slow, pytest.mark.extended]

ROOT = Path(__file__).resolve().parents[2]
# What a build reads: the project's metadata, its packages and conf/ (copied, so the build leaves nothing here).
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "ablations", "blockbench", "components", "conf",
           "hydra_plugins")


def setuptools_builds_here() -> bool:
    """pyproject.toml's build requirement, installed here: build offline, without an isolated environment."""
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return False
    return int(version.split(".")[0]) >= 77


def sh(*cmd: object, cwd: Path | None = None, env: dict | None = None, timeout: int = 300) -> str:
    proc = subprocess.run([str(part) for part in cmd], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("install"))


def make_venv(tmp: Path) -> Path:
    """A fresh environment under ``tmp`` with blockbench's wheel installed (built from a copy of the sources) and
    this environment's third-party packages on its path."""
    src = tmp / "src"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes(path.read_bytes())
    wheel = build_wheel(src, tmp / "dist")

    env_dir = tmp / "venv"
    sh(sys.executable, "-m", "venv", "--without-pip", env_dir)
    python = env_dir / "bin" / "python"
    install_wheel(env_dir, wheel)
    site = Path(sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    here = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz_host_packages.pth").write_text("".join(f"{p}\n" for p in here))
    return env_dir


def build_wheel(src: Path, dist: Path) -> Path:
    """A wheel of the project at ``src`` in ``dist`` (offline where setuptools is here)."""
    isolation = ["--no-build-isolation"] if setuptools_builds_here() else []
    sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", dist, src)
    return max(dist.glob("*.whl"), key=lambda p: p.stat().st_mtime)


def install_wheel(env_dir: Path, wheel: Path) -> None:
    sh(sys.executable, "-m", "pip", "--python", env_dir / "bin" / "python", "install", "-q", "--no-deps", "--no-index",
       wheel)


@pytest.fixture
def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def test_the_packages_and_conf_come_from_the_wheel(venv, env, tmp_path):
    out = sh(venv / "bin" / "python", "-c", "import ablations, components; "
             "from ablations.config.paths import conf_dir; "
             "print(ablations.__file__, components.__file__, conf_dir(), sep='\\n')", cwd=tmp_path, env=env)
    files = [Path(line) for line in out.splitlines()]
    assert all(f.is_relative_to(venv) for f in files), files
    assert files[2] == Path(files[0]).parent / "conf" and (files[2] / "config.yaml").is_file()
    shipped = {p.relative_to(files[2]) for p in files[2].rglob("*.yaml")}
    assert shipped == {p.relative_to(ROOT / "conf") for p in (ROOT / "conf").rglob("*.yaml")}


def test_a_smoke_sweep_its_report_and_a_prediction_from_an_empty_folder(venv, env, tmp_path):
    blockbench = venv / "bin" / "blockbench"
    sweep = tmp_path / "out"
    # hydra.sweep.dir relative: the results land under the working directory, as the default results/runs/ does.
    out = sh(blockbench, "run", "+sweep=norm", "profile=smoke", "model=tiny", "threads=1", "hydra.sweep.dir=out",
             cwd=tmp_path, env=env)
    assert out.strip().splitlines()[-1] == str(sweep.resolve())
    assert set(pd.read_csv(sweep / "results.csv")["variant"]) == {"gpt2", "rmsnorm"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing written beside it, nothing elsewhere

    (sweep / "REPORT.md").unlink()
    out = sh(blockbench, "report", "out", cwd=tmp_path, env=env)
    assert out.strip() == str((sweep / "REPORT.md").resolve())
    assert (sweep / "REPORT.md").read_text().startswith("# blockbench report: norm")

    out = sh(blockbench, "predict", cwd=tmp_path, env=env)
    assert "Predicted (not measured): llama2_7b on h100_sxm" in out
