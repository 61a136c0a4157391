"""``blockbench regress BASE`` (``python -m ablations.regress``): is the working tree's timed library slower than BASE?

    blockbench regress HEAD~1                       # the default cases, threshold 2%
    blockbench regress origin/main -k block --threshold 3
    blockbench regress HEAD --cases ci --honour-marker   # what CI runs
    blockbench regress --history results/runs/regress block/llama2/train
    blockbench regress HEAD~1 --plugin-path ../my-plugin   # a plugin's two revisions, blockbench fixed

Both revisions' ``components`` are imported into this one process and timed paired, round by round (see
``ablations.regress.paired``); each group of cases (``block/*/forward``) also gets a verdict from its cases'
rounds pooled, which sees a slowdown of shared code that one case's rounds cannot; the norms', positions'
and attention decode's cases are also counted in instructions under callgrind. A case whose settings the base does
not implement is ``not compared``, with the reason (``ablations.regress.comparable``); one whose interval is wider
than the band between 1 - threshold and 1 + threshold, and past neither edge, is ``not judged``, with the rounds
that would judge it (``ablations.regress.paired.judge``): neither a regression nor a pass. A time regression stands
only when a fresh process, timing it again, flags it too (``ablations.regress.confirm``); two sides whose timed
packages have byte-identical source are not timed at all (``--time-identical`` times them). The summary counts cases
(a case regressed if any of its signals did), then the signals. Exit status: 0 no regression, 1 a regression (one
line per case, group and signal), 2 a setup problem (unknown revision, a tree that does not import, a filter that
matches nothing), decided before any timing.

This module is the command line (its arguments, ``main``); one check runs in ``ablations.regress.check``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ablations.config.errors import UsageError, command, prog
from ablations.measure.intervals import RoundsRule
from ablations.regress.cases import CASE_SETS
from ablations.regress.check import DEFAULT_OUT, run_check
from ablations.regress.history import run_history
from ablations.regress.plugin_trees import with_plugin
from ablations.regress.revisions import INTENDED_MARKER, SetupError
from ablations.regress.selection import chosen_cases

PROG = prog("regress")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", nargs="?", help="git revision to compare the working tree against (HEAD~1, origin/main)")
    p.add_argument("--merge-base", action="store_true",
                   help="compare against the merge base of BASE and HEAD (what a pull request changes), not BASE")
    # 2, not 5: same-code runs of the default cases flag nothing even at 1%, while at 5% a slowdown of about 5% sits
    # on the edge and goes uncaught (docs/regression.md).
    p.add_argument("--threshold", type=float, default=2.0, metavar="PCT",
                   help="time: regression when the 95%% interval of head/base lies above 1 + PCT%% (default 2); "
                        "an interval wider than 2 x PCT%% and past neither 1 - PCT%% nor 1 + PCT%% is not judged")
    p.add_argument("--callgrind-threshold", type=float, default=1.0, metavar="PCT",
                   help="instructions per call: regression when head/base is above 1 + PCT%% (default 1)")
    p.add_argument("--cases", choices=CASE_SETS, default="default", help="case set (default: all; ci: six cases)")
    p.add_argument("-k", dest="patterns", action="append", default=[], metavar="PATTERN",
                   help="only cases whose name (component/variant/mode) has PATTERN in whole segments: PATTERN split "
                        "on / must match that many consecutive segments, each part a glob within one segment (*, ?, "
                        "[...] never cross a /); norm/ or norm selects norm/*/* and never block/qknorm/*, "
                        "block/*/forward every block's forward, *llama* any segment containing llama; repeatable")
    p.add_argument("--rounds", type=int, default=12,
                   help="paired rounds per case, the budget when --min-rounds is given (default 12, at least 6)")
    p.add_argument("--min-rounds", type=int, metavar="N",
                   help="sequential: stop a case once its interval straddles neither threshold edge, looking first "
                        "at N rounds and then at planned counts up to --rounds; each look's interval is widened "
                        "so the case's coverage holds under that stopping (default: off, exactly --rounds)")
    p.add_argument("--min-run-time", type=float, default=0.01, metavar="S",
                   help="seconds each side is timed per round (default 0.01)")
    p.add_argument("--warmup", type=int, default=2, help="calls of each side before timing (default 2)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--no-callgrind", action="store_true", help="timing only")
    p.add_argument("--no-confirm", action="store_true",
                   help="let one process's rounds decide: do not time a case or group that regressed by time again "
                        "in a fresh process (by default a regression stands only when that process flags it too)")
    p.add_argument("--time-identical", action="store_true",
                   help="time the cases even when head and base have byte-identical source in the timed packages "
                        "(a same-code calibration run); by default such a check times nothing and passes")
    p.add_argument("--honour-marker", action="store_true",
                   help=f"a head commit whose message has {INTENDED_MARKER} reports regressions but exits 0")
    p.add_argument("--out", type=Path, help=f"folder for the reports (default {DEFAULT_OUT}/<time>)")
    p.add_argument("--list", action="store_true", help="print the selected cases' names and exit")
    p.add_argument("--plugin-path", type=Path, metavar="DIR",
                   help="compare two revisions of the plugin checked out at DIR (BASE is its revision), blockbench "
                        "held fixed; the default inside a plugin's checkout (docs/plugins.md)")
    p.add_argument("--all-cases", action="store_true",
                   help="with a plugin: every case, not only those that take the plugin's choices")
    p.add_argument("--history", nargs=2, metavar=("DIR", "CASE"),
                   help="draw CASE's ratio over every stored run under DIR (a PNG) instead of checking")
    args = p.parse_args(argv)
    if not args.history and not args.list and not args.base:
        raise UsageError("BASE is required: the git revision to compare against (e.g. HEAD~1)")
    for key in ("threshold", "callgrind_threshold"):
        value = getattr(args, key)
        if not 0 < value < 100:
            raise UsageError(f"--{key.replace('_', '-')}={value:g} must be a percentage in (0, 100)")
    if args.rounds < 6:
        raise UsageError(f"--rounds={args.rounds} must be at least 6 (a 95% interval of a median needs 6 rounds)")
    if args.min_rounds is not None:
        problem = RoundsRule(args.min_rounds, args.rounds).problem()
        if problem:
            raise UsageError(f"--min-rounds={args.min_rounds}: {problem.split(' ', 1)[1]}")
    if args.min_run_time <= 0 or args.warmup < 0 or args.threads < 1:
        raise UsageError("--min-run-time must be > 0, --warmup >= 0 and --threads >= 1")
    return args


@command("regress")
def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        with_plugin(args)
        if args.history:
            return run_history(Path(args.history[0]), args.history[1], args.threshold, args.out)
        if args.list:
            print("\n".join(case.name for case in chosen_cases(args)))
            return 0
        return run_check(args)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
