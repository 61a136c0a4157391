"""The performance regression check: base revision against the working tree, same machine, one job.

    python scripts/bench_regression.py BASE_REV                 # e.g. origin/main, HEAD~1, a commit
    python scripts/bench_regression.py HEAD -- -k norm          # pytest arguments after --
    python scripts/bench_regression.py HEAD --head-env BLOCKBENCH_BENCH_SLOWDOWN=rmsnorm   # must fail

1. ``git worktree add`` BASE_REV into a temporary folder and put the head's ``tests/benchmarks`` in it: both
   sides run the same benchmark code, so only the library differs and names match.
2. Save a pytest-benchmark baseline there (``--benchmark-save``), importing the base's library.
3. Run the head against it (``--benchmark-compare`` + ``--benchmark-compare-fail=STAT:PCT%``).
4. If something regressed, confirm: rerun just those benchmarks in fresh processes, head first this time,
   then base first again, comparing the JSON reports. A regression counts only if it reproduces in every
   round. One base/head pair is two processes a minute apart on a shared machine: load that rises over the
   job always hurts whichever runs second, and a small memory-bound op can run 1.7x slower for a whole
   process (measured: rmsnorm forward, same code); a real 2x slowdown reproduces every time.

Exit status: 0 no regression, 1 a confirmed regression, 2 a setup problem (bad revision, a suite that fails).
The default STAT:PCT (min:30%) comes from measured same-code noise: see README, "Performance regression checks".
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchjson import BUDGET, REPO, SUITE, load_stats, pytest_command, run, slowdowns, split_args, suite_env

DEFAULT_STAT, DEFAULT_PCT = "min", 30


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Arguments after -- go to pytest (e.g. -k norm).")
    parser.add_argument("base", help="git revision to compare against (the baseline)")
    parser.add_argument("--stat", default=DEFAULT_STAT, choices=["min", "median", "mean"],
                        help=f"statistic compared (default {DEFAULT_STAT}: load only ever adds time, so the "
                             "minimum is the steadiest)")
    parser.add_argument("--threshold", type=int, default=DEFAULT_PCT, metavar="PCT",
                        help=f"percent slower that fails (default {DEFAULT_PCT})")
    parser.add_argument("--confirm", type=int, default=2, metavar="N",
                        help="extra rounds, in alternating order, a regression must reproduce in (default 2; 0 = none)")
    parser.add_argument("--head-env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment for the head run only (e.g. the test-only BLOCKBENCH_BENCH_SLOWDOWN)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, JSON reports)")
    args, pytest_args = split_args(parser)
    head_env = dict(kv.split("=", 1) for kv in args.head_env if "=" in kv)
    if len(head_env) != len(args.head_env):
        parser.error("--head-env takes KEY=VALUE")
    try:
        sha = git("rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}")
    except subprocess.CalledProcessError:
        print(f"bench_regression: error: {args.base!r} is not a git revision here", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="bench-regression-"))
    worktree = tmp / "base"
    git("worktree", "add", "--detach", "--quiet", str(worktree), sha)
    try:
        return check(args, pytest_args, sha, head_env, tmp, worktree)
    finally:
        git("worktree", "remove", "--force", str(worktree))
        shutil.rmtree(REPO / ".benchmarks" / tmp.name, ignore_errors=True)
        if args.keep:
            print(f"kept {tmp} (logs and JSON reports)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def check(args: argparse.Namespace, pytest_args: list[str], sha: str, head_env: dict[str, str], tmp: Path,
          worktree: Path) -> int:
    # The head's benchmark code on both sides: a changed benchmark must not look like a changed library.
    shutil.rmtree(worktree / SUITE, ignore_errors=True)
    shutil.copytree(REPO / SUITE, worktree / SUITE, ignore=shutil.ignore_patterns("__pycache__"))
    (worktree / "tests" / "__init__.py").touch()
    # PYTHONPATH puts each side's library ahead of the editable install, which points at the head.
    base_env = suite_env({"PYTHONPATH": str(worktree)})
    head_env = suite_env({"PYTHONPATH": str(REPO), **head_env})
    for side, env in (("base", base_env), ("head", head_env)):
        origin = subprocess.run([sys.executable, "-c", "import components; print(components.__file__)"], cwd=tmp,
                                env=env, capture_output=True, text=True).stdout.strip()
        print(f"{side}: library {origin}")
    print(f"base {args.base} = {sha[:12]}; head = working tree of {REPO}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()}; fail at {args.stat} +{args.threshold}%")
    # Under the head's folder (.benchmarks/ is git-ignored): pytest-benchmark 5.3 crashes printing its
    # machine-info warning when the storage is not below the current directory.
    storage_dir = REPO / ".benchmarks" / tmp.name
    storage = f"--benchmark-storage=file://{storage_dir}"
    envs, cwds = {"base": base_env, "head": head_env}, {"base": worktree, "head": REPO}
    targets = [SUITE]
    regressed: dict[str, float] = {}
    for rnd in range(1, args.confirm + 2):
        # Odd rounds run base then head, even rounds head then base: load that drifts one way over a job
        # then favours each side in turn instead of always the one that runs second.
        order = ("base", "head") if rnd % 2 else ("head", "base")
        reports, statuses = {}, {}
        for side in order:
            reports[side] = tmp / f"{side}{rnd}.json"
            extra = [f"--benchmark-json={reports[side]}"]
            if rnd == 1 and side == "base":
                extra += [storage, "--benchmark-save=base"]
            elif rnd == 1:
                # pytest-benchmark's own verdict on round 1; later rounds (reversed order) are judged from JSON.
                extra += [storage, "--benchmark-compare=0001",
                          f"--benchmark-compare-fail={args.stat}:{args.threshold}%"]
            statuses[side] = run(pytest_command(targets, *BUDGET, *extra, *pytest_args), cwds[side],
                                 envs[side], tmp / f"{side}{rnd}.log")
            if not reports[side].exists() or (side == "base" and statuses[side] != 0):
                print(f"bench_regression: error: the suite failed on the {side} (exit {statuses[side]}); "
                      f"log: {tmp / f'{side}{rnd}.log'} (rerun with --keep to read it)", file=sys.stderr)
                return 2
        changes = slowdowns(load_stats(reports["base"]), load_stats(reports["head"]), args.stat)
        summarise(changes, args.stat, args.threshold, rnd, order)
        regressed = {name: c for name, c in changes.items() if c * 100 > args.threshold}
        if statuses["head"] != 0 and not regressed:
            print(f"bench_regression: error: the head suite failed (exit {statuses['head']}) without a regression; "
                  f"log: {tmp / f'head{rnd}.log'}", file=sys.stderr)
            return 2
        if not regressed:
            cleared = f" (round {rnd} did not reproduce round {rnd - 1}'s alarm)" if rnd > 1 else ""
            print(f"PASS: no benchmark's {args.stat} is more than {args.threshold}% slower than at "
                  f"{args.base}{cleared}")
            return 0
        targets = sorted(regressed)  # confirm only what regressed; its node ids are the JSON's fullnames
        if rnd <= args.confirm:
            print(f"round {rnd}: {len(regressed)} benchmark(s) past the threshold; confirming in a fresh round")
    print(f"FAIL: {len(regressed)} benchmark(s) with {args.stat} more than {args.threshold}% slower than at "
          f"{args.base}, in every round:")
    for name, change in sorted(regressed.items(), key=lambda kv: -kv[1]):
        print(f"    {change * 100:+7.1f}%  {name}")
    return 1


def summarise(changes: dict[str, float], stat: str, threshold: int, rnd: int, order: tuple[str, str]) -> None:
    ranked = sorted(changes.items(), key=lambda kv: -kv[1])
    print(f"\nround {rnd} ({' then '.join(order)}): head/base - 1 of {stat} per benchmark, slowest first "
          f"(fail above +{threshold}%):")
    for name, change in ranked[:8]:
        flag = "  <-- past threshold" if change * 100 > threshold else ""
        print(f"    {change * 100:+7.1f}%  {name}{flag}")
    if len(ranked) > 8:
        print(f"    ... {len(ranked) - 8} more, the fastest {ranked[-1][1] * 100:+.1f}%")


if __name__ == "__main__":
    raise SystemExit(main())
