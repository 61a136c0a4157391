"""What every ``blockbench`` command does before its own modules import.

``plugins=[pkg.mod,...]``: the argument every command takes, read before the command's modules are
imported (they read the declared choices as they import: the Hydra schema, the generated configs and sweeps).

The modules named join ``$BLOCKBENCH_PLUGINS`` (``components.plugins``), so the processes the command starts (the
tuned allocator's re-exec, Hydra's launchers, the regression check's children) import them too; then they are
imported here, and one that fails stops the command with one line and exit status 2. Imports nothing of the
harness until a command names a plugin or runs: ``blockbench --help`` stays free of torch.

A timing command first restarts itself with glibc's allocator tuned (``reexec_with_tuned_malloc``): glibc returns and
refaults large buffers between calls, which makes memory-bound timings measure the page faults instead of the
kernels (to see what it does on a machine: run a sweep with ``BLOCKBENCH_MALLOC=off`` and without, then
``blockbench compare OFF_RUN TUNED_RUN``). glibc reads its tunables only at start-up, hence the restart;
``BLOCKBENCH_MALLOC=off`` keeps the default allocator (the setting is recorded per row).
"""

from __future__ import annotations

import os
import sys

from ablations.config.errors import CommandError, UsageError, error_line

KEY = "plugins"
ENV = "BLOCKBENCH_PLUGINS"  # components.plugins.ENV: read there, named here without importing torch
TUNED = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}


def reexec_with_tuned_malloc(module: str, argv: list[str] | None = None) -> None:
    """Restart as ``python -m module ARGV`` (this process's arguments by default) with the tunables set, unless
    they are set or tuning is off."""
    if os.environ.get("BLOCKBENCH_MALLOC", "tuned") == "tuned" and any(k not in os.environ for k in TUNED):
        os.environ.update({k: os.environ.get(k, v) for k, v in TUNED.items()})
        os.execv(sys.executable, [sys.executable, "-m", module, *(sys.argv[1:] if argv is None else argv)])


def parse(value: str) -> list[str]:
    """``[a.b,c]``, ``a.b,c`` or ``a.b``: the modules named, each a dotted Python name."""
    names = [n.strip().strip("'\"") for n in value.strip().removeprefix("[").removesuffix("]").split(",")]
    names = [n for n in names if n]
    bad = [n for n in names if not all(part.isidentifier() for part in n.split("."))]
    if bad or not names:
        raise UsageError(f"{KEY}={value}: {bad[0]!r} is not a module name" if bad else
                         f"{KEY}={value}: no module named; allowed: {KEY}=[pkg.module,...]")
    return names


def take_plugins(argv: list[str]) -> list[str]:
    """``argv`` less its ``plugins=`` arguments, whose modules join ``$BLOCKBENCH_PLUGINS``; nothing imported yet."""
    named, rest = [], []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key.lstrip("+") == KEY:
            named += parse(value)
        else:
            rest.append(arg)
    if named:
        before = [m for m in os.environ.get(ENV, "").split(",") if m]
        os.environ[ENV] = ",".join(dict.fromkeys([*before, *named]))
    return rest


def load() -> None:
    """Import the installed plugins and ``$BLOCKBENCH_PLUGINS``'s and freeze the catalog
    (``components.plugins.load_catalog``) now, where a failure is still one line: a ``UsageError`` naming the plugin
    and its error."""
    from components.plugins import PluginError, load_catalog, named_in_env

    try:
        load_catalog(named_in_env())  # env again: a module named after this process's first load
    except PluginError as exc:
        raise UsageError(str(exc)) from None


def start(command: str, argv: list[str]) -> list[str]:
    """For a ``python -m`` entry that imports the command's modules next: ``argv`` less ``plugins=``, with every
    plugin imported, or the command's one error line and exit status 2."""
    try:
        rest = take_plugins(argv)
        load()
    except CommandError as exc:
        print(error_line(command, exc.message), file=sys.stderr)
        sys.exit(exc.status)
    return rest
