"""Options for the whole suite, registered here so they work from the repository root; and the suite's own user
config folder."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# No test reads the developer's own config folder (~/.config/blockbench: a calibration or sizes of their own would
# change what the tests see): each process of the suite, and the subprocesses it starts, gets one that does not exist.
# A test that needs one sets BLOCKBENCH_HOME itself.
_SCRATCH = Path(tempfile.mkdtemp(prefix="blockbench-tests-"))
os.environ["BLOCKBENCH_HOME"] = str(_SCRATCH / "home")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-benchmarks", action="store_true", default=False,
                     help="run tests/benchmarks (pytest-benchmark suite and ratio checks); skipped otherwise")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SCRATCH, ignore_errors=True)
