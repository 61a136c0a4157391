"""Options for the whole suite, registered here so they work from the repository root."""

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-benchmarks", action="store_true", default=False,
                     help="run tests/benchmarks (pytest-benchmark suite and ratio checks); skipped otherwise")
