"""Options for the whole suite, registered here so they work from the repository root; the suite's own user
config folder; and the one smoke sweep that the tests of what a real sweep writes all read."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from filelock import FileLock

# No test reads the developer's own config folder (~/.config/blockbench: a calibration or sizes of their own would
# change what the tests see): each process of the suite, and the subprocesses it starts, gets one that does not exist.
# A test that needs one sets BLOCKBENCH_HOME itself.
_SCRATCH = Path(tempfile.mkdtemp(prefix="blockbench-tests-"))
os.environ["BLOCKBENCH_HOME"] = str(_SCRATCH / "home")

# One core per process of the suite: under `-n 2` two workers (and the sweeps they start) share the cores, and
# torch's default of a thread per core oversubscribes them, its threads' spin-waits slowing the tiny models of
# tests/components many times over. No test measures speed; a test of the thread setting passes `threads=` itself, and a
# sweep's `threads=0` (all cores) still sets its own count.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-benchmarks", action="store_true", default=False,
                     help="run tests/benchmarks (pytest-benchmark suite and ratio checks); skipped otherwise")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SCRATCH, ignore_errors=True)


@dataclass(frozen=True)
class SweepRun:
    """A finished sweep subprocess: its folder, exit status and output."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str


# The README's main job at the smoke profile, on the default model: what a newcomer's first sweep writes. On one
# core, as every process of the suite (above): it runs beside both workers.
SMOKE_NORM = ["+sweep=norm", "profile=smoke", "threads=1"]


def shared_sweep(tmp_path_factory: pytest.TempPathFactory, name: str, argv: list[str]) -> SweepRun:
    """``python -m ablations ARGV`` run once for the whole session, however many xdist workers ask: the first runs
    it under a file lock in the folder all workers share, the others read what it left. Tests read its folder;
    none may write into it (a test that changes what is there works on a copy)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # each worker's basetemp is a folder of the session's
    folder, record = shared / name, shared / f"{name}.json"
    with FileLock(str(shared / f"{name}.lock")):
        if not record.exists():
            proc = subprocess.run([sys.executable, "-m", "ablations", *argv, f"hydra.sweep.dir={folder}"],
                                  capture_output=True, text=True, timeout=600)
            record.write_text(json.dumps({"returncode": proc.returncode, "stdout": proc.stdout,
                                          "stderr": proc.stderr}))
    return SweepRun(folder, **json.loads(record.read_text()))


@dataclass(frozen=True)
class SharedSweep:
    """A sweep the session runs once (``shared_sweep``), and the module it needs installed (an extra), if any."""

    name: str
    argv: tuple[str, ...]
    needs: str | None = None

    @property
    def installed(self) -> bool:
        return self.needs is None or importlib.util.find_spec(self.needs) is not None

    def run(self, tmp_path_factory: pytest.TempPathFactory) -> SweepRun:
        return shared_sweep(tmp_path_factory, self.name, list(self.argv))


# Every shared sweep, by the name of the fixture that returns it (``shared_sweep_fixture``).
SHARED_SWEEPS: dict[str, SharedSweep] = {}


def shared_sweep_fixture(name: str, argv: list[str], needs: str | None = None) -> Callable:
    """Declare a session fixture over the shared sweep ``python -m ablations ARGV``: the decorated function gets
    the finished run, checks it and returns what the tests read. Skips where ``needs`` is not installed."""
    sweep = SharedSweep(name, tuple(argv), needs)

    def declare(check: Callable[[SweepRun], object]) -> Callable:
        def fixture(tmp_path_factory: pytest.TempPathFactory) -> object:
            if not sweep.installed:
                pytest.skip(f"{needs} is not installed")
            return check(sweep.run(tmp_path_factory))

        SHARED_SWEEPS[check.__name__] = sweep
        return pytest.fixture(scope="session", name=check.__name__)(fixture)

    return declare


@pytest.fixture(scope="session", autouse=True)
def shared_sweeps_in_the_background(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """One process of the session (xdist's first worker, or the only one) starts every shared sweep its selected
    tests take, one after the other in a thread, at its first test: a test on another worker that asks for one then
    finds it done or running, instead of running it while the first worker waits on the lock with a core idle.
    Waited for at the end, so no sweep outlives the session."""
    wanted = [sweep for fixture, sweep in SHARED_SWEEPS.items() if sweep.installed
              and any(fixture in getattr(item, "fixturenames", ()) for item in request.session.items)]
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0" or not wanted:
        yield
        return
    thread = threading.Thread(target=lambda: [sweep.run(tmp_path_factory) for sweep in wanted],
                              name="shared sweeps", daemon=True)
    thread.start()
    yield
    thread.join()


@shared_sweep_fixture("smoke-norm-sweep", SMOKE_NORM)
def smoke_norm_sweep(run: SweepRun) -> SweepRun:
    """The README's main job at the smoke profile, read by every test of what a real sweep writes."""
    return run


@pytest.fixture
def as_job() -> Iterator[Callable]:
    """``as_job(cfg)`` makes ``cfg``'s Hydra node the current job's (tests/ablations/jobs.py); cleared after."""
    from hydra.core.hydra_config import HydraConfig

    yield HydraConfig.instance().set_config
    HydraConfig.instance().cfg = None
