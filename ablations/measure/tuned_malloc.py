"""glibc's allocator returns and refaults large buffers between calls, which makes memory-bound timings measure the
page faults instead of the kernels (to see what it does on a machine: run a sweep with ``BLOCKBENCH_MALLOC=off`` and
without, then ``blockbench compare OFF_RUN TUNED_RUN``). It reads its tunables only at start-up, so a
timing command sets them and starts itself once more; ``BLOCKBENCH_MALLOC=off`` keeps the default allocator
(the setting is recorded per row)."""

from __future__ import annotations

import os
import sys

TUNED = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}


def reexec_with_tuned_malloc(module: str, argv: list[str] | None = None) -> None:
    """Restart as ``python -m module ARGV`` (this process's arguments by default) with the tunables set, unless
    they are set or tuning is off."""
    if os.environ.get("BLOCKBENCH_MALLOC", "tuned") == "tuned" and any(k not in os.environ for k in TUNED):
        os.environ.update({k: os.environ.get(k, v) for k, v in TUNED.items()})
        os.execv(sys.executable, [sys.executable, "-m", module, *(sys.argv[1:] if argv is None else argv)])
