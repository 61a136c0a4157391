"""One check from start to end: the cases chosen, both trees loaded, each case measured and counted, the time
regressions confirmed, and the reports written and printed; the exit status."""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

from ablations.config.errors import UsageError, prog
from ablations.regress.case_counts import counts, plural, regressed_text
from ablations.regress.confirm import confirm
from ablations.regress.instruction_counts import count_instructions
from ablations.regress.measure_case import measure
from ablations.regress.outcome_lines import (
    case_text,
    confirmed_text,
    identical_text,
    not_compared_lines,
    not_judged_lines,
    regression_lines,
)
from ablations.regress.paired import case_confidence, pooled_rows, tests_in
from ablations.regress.plugin_trees import plugin_trees
from ablations.regress.report_files import benchmark_json, write_all
from ablations.regress.revisions import INTENDED_MARKER, REPO, intended, merge_base
from ablations.regress.selection import chosen_cases
from ablations.regress.summary import base_text, head_text, markdown
from ablations.regress.trees import Tree, base_tree, head_tree, identical_source
from ablations.results.provenance import malloc_setting

PROG = prog("regress")
DEFAULT_OUT = REPO / "results" / "runs" / "regress"


def writable(out: Path) -> Path:
    """The report folder, created and proven writable before any timing (a setup problem otherwise)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out).close()
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write the reports there ({exc.strerror or exc})") from None
    return out


def run_check(args: argparse.Namespace) -> int:
    """The check ``args`` asks for, start to end: its exit status, 1 when a case or group regressed (0 when a head
    commit marked the slowdown intended and ``--honour-marker`` honours it), else 0."""
    started = time.monotonic()
    of = args.base if args.merge_base else None
    cases = chosen_cases(args)
    confidence = case_confidence(tests_in([case.name for case in cases]))
    asked = merge_base(args.base, args.plugin or REPO) if args.merge_base else args.base
    with tempfile.TemporaryDirectory(prefix="regress-base-") as tmp:
        if args.plugin:
            base, head = (t.load() for t in plugin_trees(asked, args.plugin, Path(tmp)))
        else:
            base, head = base_tree(asked, Path(tmp)).load(), head_tree().load()
        default_out = args.plugin / "results" / "regress" if args.plugin else DEFAULT_OUT
        out = writable(args.out or default_out / time.strftime("%Y-%m-%d_%H-%M-%S"))
        torch.set_num_threads(args.threads)
        sides = (f"{head_text(head.revision)} against "
                 f"{base_text({'revision': base.revision, 'asked': args.base, 'merge_base_of': of})}")
        same = 0 if args.time_identical else identical_source(base, head)
        if same:
            return report_identical(args, base, head, of, same, out, started)
        each = f"{args.rounds}" if args.min_rounds is None else f"{args.min_rounds} to {args.rounds}"
        print(f"{PROG}: {len(cases)} case(s), {sides.replace('`', '')}, {each} paired rounds each",
              file=sys.stderr)
        rows, times = [], {"base": {}, "head": {}}
        for i, case in enumerate(cases, 1):
            row, sides = measure(case, base, head, args, confidence)
            gc.collect()
            rows.append(row)
            for side, data in sides.items():
                times[side][case.name] = data
            shown = case_text(row)  # a case not judged says how many rounds would judge it
            print(f"[{i}/{len(cases)}] {case.name}: {shown} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        note = count_instructions(rows, base, head, args, out)
    groups = pooled_rows(rows, args.threshold / 100, confidence, first=args.min_rounds)
    again = 0 if args.no_confirm else confirm(args, base.revision, rows, groups, out / "confirmation")
    if again:
        print(f"{PROG}: {plural(again, 'time regression')} timed again in a fresh process: "
              f"{confirmed_text(rows, groups)}", file=sys.stderr)
    marked = intended(head.root, head.revision) if args.honour_marker else None
    report = {
        **sides_of(args, base, head, of), "callgrind_threshold_pct": args.callgrind_threshold,
        "rounds": args.rounds, "min_rounds": args.min_rounds, "case_confidence": confidence,
        "min_run_time": args.min_run_time, "warmup": args.warmup, "threads": args.threads, "malloc": malloc_setting(),
        "callgrind_note": note, "confirm": not args.no_confirm, "cases": rows, "groups": groups,
        "wall_s": time.monotonic() - started,
        "intended_note": f"regressions intended: {INTENDED_MARKER} in commit {marked}" if marked else "",
    }
    report["regressions"] = regression_lines(report)
    report["not_compared"] = not_compared_lines(report)
    report["not_judged"] = not_judged_lines(report)
    report["counts"] = counts(report)
    report["verdict"] = "regression" if report["regressions"] else "ok"
    write_all(report, {side: benchmark_json(report, side, times[side]) for side in times}, out)
    print(markdown(report))
    for line in report["regressions"]:
        print(line, file=sys.stderr)
    if report["regressions"]:
        print(f"{PROG}: {regressed_text(report)}", file=sys.stderr)
    print(f"{PROG}: reports in {out}", file=sys.stderr)
    if report["regressions"] and marked:
        print(f"{PROG}: {regressed_text(report)}, intended by {INTENDED_MARKER} in {marked}: not failing",
              file=sys.stderr)
        return 0
    return 1 if report["regressions"] else 0


def machine() -> str:
    """The series a stored run belongs to, by the hardware it ran on: CPU model, logical cores, architecture
    (host names of CI runners change every run; the hardware is what a ratio depends on)."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return f"{model or platform.processor() or 'unknown CPU'}, {os.cpu_count()} cores, {platform.machine()}"


def sides_of(args: argparse.Namespace, base: Tree, head: Tree, of: str | None) -> dict:
    """What every report opens with: the two sides compared, where, with which torch, when, at what threshold."""
    return {"base": {"asked": args.base, "revision": base.revision, "merge_base_of": of},
            "head": {"revision": head.revision}, "machine": machine(), "threshold_pct": args.threshold,
            "torch": torch.__version__, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def report_identical(args: argparse.Namespace, base: Tree, head: Tree, of: str | None, files: int, out: Path,
                     started: float) -> int:
    """The check of two sides whose timed packages have the same bytes: nothing to time, no regression possible;
    the report says so (and which revisions) instead of timing noise."""
    report = {**sides_of(args, base, head, of), "identical_source": {"files": files, "packages": list(head.packages)},
              "cases": [], "groups": [], "wall_s": time.monotonic() - started, "regressions": [], "verdict": "ok"}
    write_all(report, {}, out)
    print(markdown(report))
    print(f"{PROG}: {identical_text(report)}", file=sys.stderr)
    print(f"{PROG}: reports in {out}", file=sys.stderr)
    return 0
