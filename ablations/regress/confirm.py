"""A time regression stands only when a fresh process, timing the flagged cases again, flags them too.

A case's interval covers the spread of its rounds within one process, but a process also fixes things every round
shares: where each side's code and long-lived objects sit in memory, which core the thread settles on, what a
neighbour was doing in the few seconds the case took. Those move the ratio of identical code of the sub-millisecond
cases by several percent between processes, so one process's rounds, read at 95%, flag identical code now and then
(docs/regression.md has the measurements).

So each case or group that regressed by time is timed again, with the same settings, in a new process
(``python -m ablations.regress BASE -k NAME ... --no-confirm``): the regression stands when that process flags it too,
and is ``not confirmed`` otherwise: neither a regression nor a pass, with both intervals in the report. Requiring
both keeps each side's 95% (a false alarm needs two); the price is power where one process's is marginal (about its
square), which ``tests/regress/test_confirm.py`` measures by simulation. If the confirmation itself cannot run, the
regression stands: a fault never hides one. Instruction counts (callgrind) are deterministic and not confirmed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

NOT_CONFIRMED = "not confirmed"
KEPT = ("ratio", "lo", "hi", "verdict", "rounds", "cases")


def flagged(rows: list[dict], groups: list[dict]) -> list[str]:
    """The cases and groups whose time regressed: what the fresh process times again (a group by its cases)."""
    return [r["name"] for r in [*rows, *groups] if r.get("verdict") == "regression"]


def command(args: argparse.Namespace, base_revision: str, names: list[str], out: Path) -> list[str]:
    """The check again for ``names`` only, against the same base commit with the same settings, without a
    confirmation of its own and without instruction counts (those do not vary between processes)."""
    cmd = [sys.executable, "-m", "ablations.regress", base_revision, "--cases", args.cases,
           *[arg for name in names for arg in ("-k", name)],
           "--threshold", str(args.threshold), "--rounds", str(args.rounds), "--min-run-time", str(args.min_run_time),
           "--warmup", str(args.warmup), "--threads", str(args.threads), "--no-callgrind", "--no-confirm",
           "--out", str(out)]
    if args.min_rounds is not None:
        cmd += ["--min-rounds", str(args.min_rounds)]
    if args.plugin:
        cmd += ["--plugin-path", str(args.plugin), *(["--all-cases"] if args.all_cases else [])]
    if args.time_identical:
        cmd.append("--time-identical")
    return cmd


def run(cmd: list[str], out: Path) -> dict[str, dict] | str:
    """The fresh process's rows by name, or why there are none (then every regression stands)."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    report = out / "regress.json"
    if proc.returncode not in (0, 1) or not report.is_file():
        lines = (proc.stderr or "").strip().splitlines()
        return f"the confirmation did not run (exit {proc.returncode}: {lines[-1] if lines else 'no output'})"
    data = json.loads(report.read_text())
    return {r["name"]: r for r in [*data.get("cases", []), *data.get("groups", [])]}


def apply(rows: list[dict], groups: list[dict], again: dict[str, dict] | str) -> None:
    """Each time regression of ``rows`` and ``groups`` gets its ``confirmation``; one the fresh process did not flag
    becomes ``not confirmed``. One it could not time again keeps its verdict, with the reason."""
    for r in [*rows, *groups]:
        if r.get("verdict") != "regression":
            continue
        if isinstance(again, str):
            r["confirmation"] = {"error": again}
            continue
        second = again.get(r["name"])
        if second is None or "ratio" not in second:  # missing from its report, or not compared or failed there
            why = second["verdict"] if second else "missing from its report"
            r["confirmation"] = {"error": f"not timed again ({why})"}
            continue
        r["confirmation"] = {k: second[k] for k in KEPT if k in second}
        if second["verdict"] != "regression":
            r["verdict"] = NOT_CONFIRMED


def confirm(args: argparse.Namespace, base_revision: str, rows: list[dict], groups: list[dict], out: Path) -> int:
    """Times the flagged cases and groups again in a fresh process (reports in ``out``) and applies its verdicts;
    returns how many were timed again."""
    names = flagged(rows, groups)
    if names:
        apply(rows, groups, run(command(args, base_revision, names, out), out))
    return len(names)
