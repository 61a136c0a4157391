"""``python -m ablations +sweep=norm``: see README.md."""

import os
import sys

# glibc's allocator returns and refaults large buffers between calls, which moved memory-bound timings
# by up to 4x here (DESIGN.md). It reads these only at start-up, so set them and start again once.
_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}
if os.environ.get("BLOCKBENCH_MALLOC", "tuned") == "tuned" and any(k not in os.environ for k in _MALLOC):
    os.environ.update({k: os.environ.get(k, v) for k, v in _MALLOC.items()})
    os.execv(sys.executable, [sys.executable, "-m", "ablations", *sys.argv[1:]])

from ablations.cli import main  # noqa: E402

main()
