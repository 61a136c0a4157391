"""Benchmark suite plumbing: opt-in gating, pinned threads and the ``timed`` helper.

Everything under ``tests/benchmarks`` is skipped in the plain unit-test run. It runs when asked:

    python -m pytest tests/benchmarks --benchmark-only          # the pytest-benchmark suite
    python -m pytest tests/benchmarks --run-benchmarks          # the suite and the in-run ratio checks

It never runs under xdist: workers on the same cores time each other.

Environment (read here only, never by the library):

- ``BLOCKBENCH_BENCH_THREADS``: torch threads (default 1). One thread, because this machine's two cores
  are shared and two processes at two threads each slowed each other by up to 5x.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).parent
THREADS_ENV = "BLOCKBENCH_BENCH_THREADS"
WARMUP_CALLS = 2  # first calls pay for allocation and lazy init; pytest-benchmark does no warmup on CPython


def _under_xdist(config: pytest.Config) -> bool:
    # A worker has ``workerinput``; the controller has ``-n N`` set.
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", None))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees every collected item, not only this folder's: filter by path.
    ours = [item for item in items if HERE in item.path.parents]
    if not ours:
        return
    if _under_xdist(config):
        reason = "benchmarks never run under xdist (workers would time each other); run them without -n"
    elif config.getoption("run_benchmarks", default=False) or config.getoption("benchmark_only", default=False):
        # Bad settings stop the run here, in one line, rather than erroring every test.
        bench_threads()
        return
    else:
        reason = "benchmarks are opt-in: python -m pytest tests/benchmarks --run-benchmarks (or --benchmark-only)"
    skip = pytest.mark.skip(reason=reason)
    for item in ours:
        item.add_marker(skip)


def bench_threads() -> int:
    value = os.environ.get(THREADS_ENV, "1")
    try:
        threads = int(value)
    except ValueError:
        raise pytest.UsageError(f"{THREADS_ENV}={value!r} must be a positive integer") from None
    if threads < 1:
        raise pytest.UsageError(f"{THREADS_ENV}={value!r} must be a positive integer")
    return threads


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    # Saved with every run, so a baseline says how it was measured (a mismatch is warned about on compare).
    machine_info["torch"] = torch.__version__
    machine_info["torch_threads"] = bench_threads()
    machine_info["malloc"] = ",".join(
        f"{k}={os.environ[k]}" for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_") if k in os.environ
    ) or "default"


@pytest.fixture(scope="session", autouse=True)
def pinned_threads() -> Iterator[int]:
    before = torch.get_num_threads()
    torch.set_num_threads(bench_threads())
    yield torch.get_num_threads()
    torch.set_num_threads(before)


@pytest.fixture
def timed(benchmark: object, pinned_threads: int) -> Callable[..., None]:
    """``timed(fn, group=..., **info)``: warm ``fn`` up, then let pytest-benchmark time it.

    ``info`` lands in ``benchmark.extra_info`` next to the thread count, so the JSON says what was timed.
    """

    def run(fn: Callable[[], object], *, group: str, **info: object) -> None:
        for _ in range(WARMUP_CALLS):
            fn()
        benchmark.group = group
        benchmark.extra_info.update(info, threads=pinned_threads, torch=torch.__version__)
        benchmark(fn)

    return run
