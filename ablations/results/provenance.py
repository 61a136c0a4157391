"""What every row carries about where and how it was measured."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path

import torch

from ablations.config.paths import ROOT

REPO = ROOT  # git runs here: the checkout's revision, "unknown" where the package is not in one


@functools.cache
def git_revision() -> str:
    """Short revision of the checkout, with ``-dirty`` when tracked files differ; ``unknown`` outside git."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        if not rev:
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO, capture_output=True, text=True, timeout=5,
        ).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def malloc_setting() -> str:
    """The glibc tunables that steady CPU timings (set by ``python -m ablations``), as recorded."""
    keys = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
    return ",".join(f"{k}={os.environ[k]}" for k in keys if k in os.environ) or "default"


def plugins_loaded() -> str:
    """Every plugin this process loaded, ``name==version`` separated by spaces; empty where none."""
    from components.plugins import loaded

    return " ".join(p.pinned for p in loaded())


def provenance(device: torch.device, dtype: torch.dtype, threads: int, compiled: bool, launcher: str) -> dict:
    return {
        "device": device.type,
        "device_name": device_name(device),
        "dtype": str(dtype).removeprefix("torch."),
        "threads": threads,
        "compile": compiled,
        "launcher": launcher,
        "torch": torch.__version__,
        "git_rev": git_revision(),
        "malloc": malloc_setting(),
        "host": platform.node(),
        "plugins": plugins_loaded(),
    }
