"""Measure the benchmark suite's same-code noise, to choose ``--benchmark-compare-fail`` thresholds from data.

    python scripts/bench_noise.py -n 4                 # 4 runs of the whole suite, same revision
    python scripts/bench_noise.py -n 6 -- -k norm      # only some benchmarks (args after -- go to pytest)

Runs the suite N times, each in a fresh process with the regression workflow's time budget, then treats
every ordered pair of runs (i as baseline, j as head) as a compare of identical code and reports, for the
``min`` and ``median`` statistics: the per-benchmark spread (slowest/fastest run), the worst same-code
"slowdown" of any benchmark, and the share of run pairs that a given threshold would have failed. A
threshold belongs above the worst same-code slowdown, with margin.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchjson import BUDGET, REPO, SUITE, load_stats, pytest_command, run, slowdowns, split_args, suite_env

STATS = ("min", "median")
CANDIDATES = (10, 15, 20, 25, 30, 40, 50, 75, 100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--runs", type=int, default=4, help="suite runs (default 4)")
    parser.add_argument("--out", type=Path, help="keep the JSON reports here (default: a temporary folder)")
    args, pytest_args = split_args(parser)
    if args.runs < 2:
        parser.error("-n must be at least 2: noise is a difference between runs")
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-noise-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()} at start")
    runs = []
    for i in range(args.runs):
        path = out / f"run{i}.json"
        started = time.monotonic()
        status = run(pytest_command([SUITE], *BUDGET, f"--benchmark-json={path}", *pytest_args), REPO, suite_env(),
                     out / f"run{i}.log", echo=False)
        if status != 0:
            print(f"bench_noise: run {i} failed with exit status {status}; see {out / f'run{i}.log'}")
            return 2
        print(f"run {i}: {time.monotonic() - started:.0f} s, load average {os.getloadavg()}")
        runs.append(load_stats(path))
    report(runs)
    print(f"JSON reports: {out}")
    return 0


def report(runs: list[dict[str, dict[str, float]]]) -> None:
    names = sorted(set.intersection(*(set(r) for r in runs)))
    pairs = list(itertools.permutations(range(len(runs)), 2))
    print(f"\n{len(names)} benchmarks, {len(runs)} runs, {len(pairs)} ordered run pairs (baseline, head)")
    for stat in STATS:
        spread = {n: max(r[n][stat] for r in runs) / min(r[n][stat] for r in runs) - 1 for n in names}
        worst_by_pair = [max(slowdowns(runs[i], runs[j], stat).values()) for i, j in pairs]
        ranked = sorted(spread.items(), key=lambda kv: kv[1], reverse=True)
        q = statistics.quantiles(spread.values(), n=10)
        print(f"\n[{stat}] per-benchmark spread (slowest run / fastest run - 1): "
              f"median {_pct(statistics.median(spread.values()))}, 90th percentile {_pct(q[-1])}, "
              f"max {_pct(ranked[0][1])}")
        for name, value in ranked[:5]:
            print(f"    {_pct(value):>7}  {name}")
        print(f"[{stat}] worst benchmark slowdown per run pair: {', '.join(_pct(w) for w in sorted(worst_by_pair))}")
        failing = ", ".join(f"{t}%: {sum(w * 100 > t for w in worst_by_pair)}/{len(pairs)}" for t in CANDIDATES)
        print(f"[{stat}] run pairs a threshold would have failed (false alarms): {failing}")


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


if __name__ == "__main__":
    raise SystemExit(main())
