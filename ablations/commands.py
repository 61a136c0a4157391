"""``blockbench``: one command for the harness, with a subcommand for each of its tools.

    blockbench run +sweep=norm profile=smoke    # the sweep (python -m ablations +sweep=norm profile=smoke)
    blockbench report DIR                       # REPORT.md from a sweep folder (python -m ablations.report DIR)
    blockbench COMMAND --help                   # that command's own help

Each subcommand is a module's ``main(argv)``, the same one its ``python -m`` form runs, so both stop alike: one
line, ``blockbench COMMAND: error: ...``, exit status 2 for bad input and 1 for a fault during the run
(``ablations.config.errors``). The modules are imported only when their command runs: ``blockbench --help`` imports
neither torch nor Hydra.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

from ablations.config.command_start import reexec_with_tuned_malloc, start, take_plugins
from ablations.config.errors import PROG, CommandError, error_line


@dataclass(frozen=True)
class Command:
    module: str  # the module whose ``main(argv)`` is the command
    summary: str  # its line in ``blockbench --help``
    # A timing command: first restart as ``python -m <malloc> ARGS`` with glibc's tuned allocator.
    malloc: str = ""


COMMANDS = {
    "run": Command("ablations.cli", "a sweep: each point timed and trained against its baseline (+sweep=NAME, "
                   "KEY=VALUE ...)", malloc="ablations"),
    "report": Command("ablations.report.__main__", "REPORT.md and figures from one or more sweep folders"),
    "quality": Command("ablations.quality.__main__", "the seed summary of finished sweeps' quality runs, as text"),
    "list": Command("ablations.tools.catalog", "every sweep, design choice and value, one line each"),
    "compare": Command("ablations.tools.compare", "did a metric get worse between two results tables?"),
    "repeat": Command("ablations.tools.repeat", "do two runs of one sweep quote the same paired ratios?"),
    "regress": Command("ablations.regress.cli", "is the working tree's timed library slower than git revision BASE?",
                       malloc="ablations.regress"),
    "step": Command("ablations.step_profile", "one point's quality training step against this machine's "
                    "peak, with the profiler's split"),
    "predict": Command("ablations.predict.__main__", "each choice at full size on named hardware (predicted)"),
    "full-size": Command("ablations.predict.full_size", "the README's \"At full size\" tables (predicted)"),
    "calibrate": Command("ablations.predict.calibrate",
                         "measure this machine and write its hardware entry into $BLOCKBENCH_HOME"),
    "sizes": Command("ablations.report.sizes", "full-size models' parameters, FLOPs per token and KV-cache bytes"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"usage: {PROG} COMMAND [ARGS ...]", "",
             "What each GPT-2 -> Llama-2 block design choice buys: sweeps, reports and predictions.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    lines += ["", f"{PROG} COMMAND --help: the command's own help. Bad input stops it with one line and exit status 2,",
              "a fault during the run with one line and exit status 1.", "",
              "Every command takes plugins=[pkg.module,...]: modules that declare choices of their own, imported",
              "before it runs, beside the installed ones (entry points blockbench.choices); docs/plugins.md."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(usage())
        return 0
    if not args or args[0] not in COMMANDS:
        problem = f"unknown command {args[0]!r}" if args else "a command is required"
        print(error_line("", f"{problem}; allowed: {', '.join(COMMANDS)} (blockbench --help says what each does)"),
              file=sys.stderr)
        return 2
    name, rest = args[0], args[1:]
    cmd = COMMANDS[name]
    try:
        rest = take_plugins(rest)  # in $BLOCKBENCH_PLUGINS, which the re-exec below keeps
    except CommandError as exc:
        print(error_line(name, exc.message), file=sys.stderr)
        return exc.status
    if cmd.malloc:
        reexec_with_tuned_malloc(cmd.malloc, rest)
    rest = start(name, rest)  # every plugin imported before the command's modules read the declared choices
    return importlib.import_module(cmd.module).main(rest)


if __name__ == "__main__":
    sys.exit(main())
