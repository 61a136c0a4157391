"""How often does ``python -m ablations.regress`` cry wolf, and how often does it catch a real slowdown?

    python scripts/regress_power.py --same 20 --inject 10:10 --inject 5:10       # the README's figures
    python scripts/regress_power.py --same 2 --inject 10:2 -- -k block/gpt2      # a quick look

Every run checks a clean worktree of HEAD against HEAD, in a fresh process, exactly as a user would:

- ``--same N``: N runs of the unchanged code (every regression verdict is a false alarm);
- ``--inject PCT:N``: N runs with extra work added to every block of the worktree's code through a test-only
  subclass (``ablations.regress.added_work``: two matmuls through a zero matrix, so outputs are unchanged; the line
  that swaps it in is appended to the worktree's ``components/block.py``, so the head tree has it and the base not),
  sized to cost about PCT% of the block's forward at the suite's block shape (d=512, 1x256): the FLOPs fraction
  first, then corrected once from a paired measurement of ``block/gpt2/forward``. Each injected run counts as
  caught when the check exits 1.

Arguments after ``--`` go to every check (e.g. ``-k block``). Each check's verdict is re-read from its JSON
at several thresholds, with the interval the library computes now from the stored rounds (the rounds do not
depend on the threshold), so one batch answers "what would 2% or 3% have flagged?". Output: a line per batch
and ``power.json`` in ``--out``; ``--analyse DIR ...`` prints the same for runs stored earlier.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import components  # noqa: E402
from ablations.measure.flops import analytic_forward_flops  # noqa: E402
from ablations.measure.intervals import median_interval  # noqa: E402
from ablations.measure.shapes import BLOCK_SHAPE, D_MODEL  # noqa: E402
from ablations.regress.architecture import arch  # noqa: E402
from ablations.regress.cases import select  # noqa: E402
from ablations.regress.paired import case_confidence, pooled_rows, tests_in  # noqa: E402

# The GPT-2 block's forward FLOPs per token at the check's block shape (d=512, 1x256).
BLOCK_FLOPS = analytic_forward_flops(arch(components), *BLOCK_SHAPE) // (BLOCK_SHAPE[0] * BLOCK_SHAPE[1])

THRESHOLDS = (1.0, 2.0, 3.0, 5.0, 10.0)
# Every run is read at the default check's family-wise level (its cases and groups), also a run that timed a few
# cases with -k: what the default check would have said of those cases' rounds.
DEFAULT_LEVEL = case_confidence(tests_in([case.name for case in select("default")]))
BLOCK = "components/block.py"


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def inject(worktree: Path, width: int) -> None:
    """The worktree's blocks with ``width`` columns of extra work (0: the original file)."""
    git("checkout", "--", BLOCK, cwd=worktree)
    if width:
        add_work_call(worktree, width)


def add_work_call(tree: Path, width: int) -> None:
    """Append to ``tree``'s ``components/block.py`` the line that makes its ``Block`` the one with extra work
    (``ablations.regress.added_work``): the blocks that tree builds add the work."""
    with (tree / BLOCK).open("a") as f:
        f.write("\nfrom ablations.regress.added_work import with_added_work  # noqa: E402  (scripts/regress_power.py)\n"
                f"Block = with_added_work(Block, {width})  # scripts/regress_power.py: injected extra work\n")


def width_for(pct: float) -> int:
    """Columns of the two extra (T x d) @ (d x w) products that cost ``pct``% of the block's forward FLOPs."""
    return max(1, round(pct / 100 * BLOCK_FLOPS / (4 * D_MODEL)))


def check(worktree: Path, out: Path, extra: list[str]) -> dict:
    # One process's rounds are what this script reads at every threshold: the same code is timed although its source
    # is the base's (--time-identical), and a regression is not timed again in a fresh process (--no-confirm).
    cmd = [sys.executable, "-m", "ablations.regress", "HEAD", "--time-identical", "--no-confirm", "--out", str(out),
           *extra]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=worktree, capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"regress_power: the check failed to run (exit {proc.returncode}): "
                         f"{proc.stderr.strip().splitlines()[-1:]}")
    report = json.loads((out / "regress.json").read_text())
    return {"exit": proc.returncode, "wall_s": wall, "report": report}


def flagged(report: dict, threshold: float, groups: bool = True) -> list[str]:
    """Cases and groups the time signal flags at ``threshold`` (percent), from each case's stored rounds with the
    intervals the library computes now (``groups=False``: the cases' own verdicts alone)."""
    cases = [case["name"] for case in report["cases"]
             if "ratios" in case and median_interval(case["ratios"], DEFAULT_LEVEL).lo > 1 + threshold / 100]
    if not groups:
        return cases
    pooled = pooled_rows(report["cases"], threshold / 100, DEFAULT_LEVEL, first=report.get("min_rounds"))
    return cases + [g["name"] for g in pooled if g["verdict"] == "regression"]


def ratio_of(report: dict, name: str) -> float | None:
    return next((case["ratio"] for case in report["cases"] if case["name"] == name and "ratio" in case), None)


def batch(label: str, worktree: Path, width: int, runs: int, out: Path, extra: list[str]) -> dict:
    inject(worktree, width)
    results = []
    for i in range(runs):
        r = check(worktree, out / f"{label}-{i + 1:02d}", extra)
        results.append(r)
        fwd = ratio_of(r["report"], "block/gpt2/forward")
        print(f"{label} run {i + 1}/{runs}: exit {r['exit']}, {r['wall_s']:.0f} s, block/gpt2/forward "
              f"{'—' if fwd is None else f'{fwd:.3f}'}, flagged at 5%: {flagged(r['report'], 5.0)}", flush=True)
    inject(worktree, 0)
    return summarise(label, width, [r["report"] for r in results], [r["wall_s"] for r in results])


def summarise(label: str, width: int | None, reports: list[dict], walls: list[float]) -> dict:
    summary = {
        "label": label, "width": width, "runs": len(reports),
        "wall_s": [round(w, 1) for w in walls],
        "block_forward_ratio": [ratio_of(r, "block/gpt2/forward") for r in reports],
        "flagged_runs": {f"{t:g}%": sum(bool(flagged(r, t)) for r in reports) for t in THRESHOLDS},
        "flagged_cases": {f"{t:g}%": sum(len(flagged(r, t)) for r in reports) for t in THRESHOLDS},
        "flagged_runs_cases_alone": {f"{t:g}%": sum(bool(flagged(r, t, groups=False)) for r in reports)
                                     for t in THRESHOLDS},
        "cases_per_run": len(reports[0]["cases"]) if reports else 0,
        "callgrind_flags": sum(1 for r in reports for case in r["cases"]
                               if (case.get("callgrind") or {}).get("verdict") == "regression"),
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "wall_s"}), flush=True)
    return summary


def analyse(folders: list[Path]) -> list[dict]:
    """The summaries of runs already stored (``LABEL-NN/regress.json`` under each folder)."""
    by_label: dict[str, list[dict]] = {}
    for folder in folders:
        for path in sorted(folder.glob("*-[0-9][0-9]/regress.json")):
            label = path.parent.name.rsplit("-", 1)[0]
            if label != "calibrate":  # batches of one label in two folders are two measurements, kept apart
                key = f"{label} ({folder})" if len(folders) > 1 else label
                by_label.setdefault(key, []).append(json.loads(path.read_text()))
    return [summarise(label, None, reports, [r["wall_s"] for r in reports]) for label, reports in by_label.items()]


def calibrate(worktree: Path, pct: float, out: Path) -> int:
    """The FLOPs estimate, corrected once by the measured paired slowdown of the block's forward."""
    width = width_for(pct)
    inject(worktree, width)
    r = check(worktree, out / f"calibrate-{pct:g}", ["-k", "block/gpt2/forward", "--no-callgrind", "--rounds", "15"])
    measured = (ratio_of(r["report"], "block/gpt2/forward") or 1.0) - 1
    inject(worktree, 0)
    if measured > 0.005:
        width = max(1, round(width * (pct / 100) / measured))
    print(f"calibrate {pct:g}%: FLOPs estimate {width_for(pct)} columns measured {100 * measured:+.1f}%; "
          f"using {width}", flush=True)
    return width


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--same", type=int, default=0, metavar="N", help="same-code runs")
    parser.add_argument("--inject", action="append", default=[], metavar="PCT:N", help="injected runs")
    parser.add_argument("--analyse", nargs="+", type=Path, metavar="DIR",
                        help="summarise stored runs under DIR (the --out of earlier runs) instead of running")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "runs" / "regress_power" /
                        time.strftime("%Y-%m-%d_%H-%M-%S"))
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    plans = []
    for spec in args.inject:
        m = re.fullmatch(r"(\d+(?:\.\d+)?):(\d+)", spec)
        if not m:
            parser.error(f"--inject {spec!r}: expected PCT:N, e.g. 10:10")
        plans.append((float(m.group(1)), int(m.group(2))))
    if args.analyse:
        report_summaries(analyse(args.analyse))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    summaries = []
    with tempfile.TemporaryDirectory(prefix="regress-power-") as tmp:
        worktree = Path(tmp) / "tree"
        git("worktree", "add", "--detach", str(worktree), "HEAD")
        try:
            if args.same:
                summaries.append(batch("same", worktree, 0, args.same, args.out, extra))
            for pct, runs in plans:
                width = calibrate(worktree, pct, args.out)
                summaries.append(batch(f"inject{pct:g}", worktree, width, runs, args.out, extra))
        finally:
            git("worktree", "remove", "--force", str(worktree))
    (args.out / "power.json").write_text(json.dumps(summaries, indent=1))
    report_summaries(summaries)
    print(args.out)
    return 0


def report_summaries(summaries: list[dict]) -> None:
    for s in summaries:
        ratios = [r for r in s["block_forward_ratio"] if r is not None]
        print(f"{s['label']}: {s['runs']} runs x {s['cases_per_run']} cases; runs flagged by time at each threshold "
              f"{s['flagged_runs']} (cases and groups flagged {s['flagged_cases']}; runs flagged by a case's own "
              f"verdict {s['flagged_runs_cases_alone']}); block/gpt2/forward head/base median "
              f"{statistics.median(ratios) if ratios else float('nan'):.3f} (range {min(ratios, default=0):.3f}-"
              f"{max(ratios, default=0):.3f}); wall {statistics.median(s['wall_s']):.0f} s median, "
              f"{max(s['wall_s']):.0f} s max; callgrind flags {s['callgrind_flags']}")


if __name__ == "__main__":
    sys.exit(main())
