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
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from ablations.config.errors import UsageError, command, prog
from ablations.measure.intervals import Precision
from ablations.regress import callgrind, comparable, paired
from ablations.regress.architecture import arch, split_overrides
from ablations.regress.case_counts import counts, plural, regressed_text
from ablations.regress.cases import CASE_SETS, Case, all_cases, select
from ablations.regress.confirm import confirm
from ablations.regress.history import history_figure, history_table
from ablations.regress.outcome_lines import (
    case_text,
    confirmed_text,
    identical_text,
    not_compared_lines,
    not_judged_lines,
    regression_lines,
)
from ablations.regress.paired import case_confidence, decided, judge, pooled_rows, tests_in, time_case
from ablations.regress.plugin_trees import load_head_plugin, plugin_root, plugin_trees
from ablations.regress.report_files import benchmark_json, write_all
from ablations.regress.subjects import Subject
from ablations.regress.summary import base_text, head_text, machine, markdown
from ablations.regress.trees import REPO, SetupError, Tree, base_tree, git, head_tree, identical_source, resolve
from ablations.results.provenance import malloc_setting
from components.plugins import PluginError

PROG = prog("regress")
DEFAULT_OUT = REPO / "results" / "runs" / "regress"
# A commit whose message carries this says its slowdown is intended: with --honour-marker the check reports
# the regression and exits 0.
INTENDED_MARKER = "[perf-intended]"


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", nargs="?", help="git revision to compare the working tree against (HEAD~1, origin/main)")
    p.add_argument("--merge-base", action="store_true",
                   help="compare against the merge base of BASE and HEAD (what a pull request changes), not BASE")
    # 2, not 5: 20 same-code runs of all 79 default cases flagged nothing even at 1% (docs/regression.md), and at 5%
    # a slowdown of about 5% is at the edge by construction and was caught in none of 10 runs.
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
        problem = Precision(args.min_rounds, args.rounds).problem()
        if problem:
            raise UsageError(f"--min-rounds={args.min_rounds}: {problem.split(' ', 1)[1]}")
    if args.min_run_time <= 0 or args.warmup < 0 or args.threads < 1:
        raise UsageError("--min-run-time must be > 0, --warmup >= 0 and --threads >= 1")
    return args


def chosen_cases(args: argparse.Namespace) -> list[Case]:
    cases = select(args.cases, args.patterns)
    if args.plugin and not args.all_cases:
        cases = [c for c in cases if plugin_case(c, args.plugin_modules)]
    unmatched = [p for p in args.patterns if not select(args.cases, [p])]
    if not cases:
        names = ", ".join(c.name for c in all_cases()[:3])
        hint = segment_hint(args.cases, unmatched)
        raise UsageError(f"-k {' -k '.join(args.patterns)} matches no case of --cases {args.cases}{hint} "
                         f"(names look like {names}, ...; --list prints them all)")
    for pattern in unmatched:  # the others matched: the check runs, and says what this one left out
        print(f"{PROG}: -k {pattern} matches no case of --cases {args.cases}{segment_hint(args.cases, [pattern])}",
              file=sys.stderr)
    return cases


def segment_hint(case_set: str, patterns: list[str]) -> str:
    """For patterns that match no case in whole segments but are part of a name: how to ask for a part of a segment
    (``-k '*llama*'``: a pattern matches whole segments)."""
    names = [c.name for c in select(case_set)]
    parts = [p for p in patterns if p and any(p in n for n in names)]
    if not parts:
        return ""
    globs = " ".join(f"-k '*{p}*'" for p in parts)
    return f"; -k matches whole segments of a name, so for a part of one: {globs}"


def plugin_case(case: Case, modules: list[str]) -> bool:
    """Whether ``case`` takes a choice or value the plugin (its ``modules``) declares."""
    from components.plugins import shaping

    values = {k: str(v) for k, v in case.overrides.items() if "." not in k and k != "kv"}
    return any(p.module in modules for p in shaping(values))


def build(tree: Tree, case: Case) -> tuple[Subject, object]:
    """The case built from ``tree``'s code and called once (so a side that cannot run it says so here), and the
    architecture the case's overrides give in that tree (what ``comparable.config_gap`` reads)."""
    with tree.active() as components:
        torch.manual_seed(0)  # both sides get the same weights and inputs
        subject = case.build(components)
        subject.call()
        return subject, arch(components, **case.overrides)


def measure(case: Case, base: Tree, head: Tree, args: argparse.Namespace,
            confidence: float) -> tuple[dict, dict[str, list[float]]]:
    """One case's row. A base that cannot run the case (an API it lacks) or does not implement what it asks for
    (``ablations.regress.comparable``) leaves it ``not compared``, with the reason, untimed; a head that cannot run
    it is a ``failure``, which fails the check like a regression."""
    row: dict = {"name": case.name, "component": case.component, "variant": case.variant, "mode": case.mode,
                 "shape": list(case.shape), "counted": case.counted}
    # The base's declaration is read before anything is built: a setting it does not declare is not timed.
    reason = comparable.declaration_gap(base.components, case.overrides)
    built = {}
    for tree in (base, head):
        if reason and tree is base:
            continue
        try:
            built[tree.label] = build(tree, case)
        except Exception as exc:  # recorded on the case; the other cases still run
            if tree is head:
                row.update(verdict="failure", error=f"the head cannot run it: {type(exc).__name__}: {exc}")
                return row, {}
            reason = f"the base cannot run it: {type(exc).__name__}: {exc}"
    if not reason:
        (b, b_arch), (h, h_arch) = built["base"], built["head"]
        groups = list(split_overrides(case.overrides)[0])
        reason = comparable.config_gap(b_arch, h_arch, groups) or comparable.design_gap(b.design, h.design)
    if reason:
        row.update(verdict="not compared", reason=reason)
        return row, {}
    subjects = {label: subject for label, (subject, _) in built.items()}
    rule = rounds_rule(args, confidence)
    threshold = args.threshold / 100

    def until(ratios: list[float]) -> bool:
        return len(ratios) in rule.looks and decided(rule.interval(ratios), threshold)

    timed = time_case(subjects["head"], subjects["base"], rounds=args.rounds, min_run_time=args.min_run_time,
                      warmup=args.warmup, until=until if args.min_rounds is not None else None)
    iv = rule.interval(timed.ratios)
    row.update(ratio=iv.median, lo=iv.lo, hi=iv.hi, coverage=iv.coverage, verdict=judge(iv, threshold),
               rounds=len(timed.ratios), stopped=("decided" if decided(iv, threshold) else "budget")
               if args.min_rounds is not None else "fixed",
               base_median_s=statistics.median(timed.b), head_median_s=statistics.median(timed.a),
               ratios=timed.ratios, cpu_share=timed.cpu_share)
    if row["verdict"] == paired.NOT_JUDGED:
        row["rounds_to_judge"] = paired.rounds_to_judge(iv, len(timed.ratios), threshold)
    return row, {"base": timed.b, "head": timed.a}


def rounds_rule(args: argparse.Namespace, confidence: float) -> Precision:
    """The case's rounds: exactly ``--rounds``, or sequential from ``--min-rounds`` with the looks' intervals held
    at the case's Bonferroni level. The stopping test is ``decided`` (the verdict), not a width."""
    return Precision(args.rounds if args.min_rounds is None else args.min_rounds, args.rounds, confidence=confidence)


def count_instructions(rows: list[dict], base: Tree, head: Tree, args: argparse.Namespace, out: Path) -> str:
    """Adds ``callgrind`` to each counted row; returns the sentence the summary says about it."""
    names = [r["name"] for r in rows if r["counted"] and "ratio" in r]  # timed and compared
    if args.no_callgrind:
        return "Instruction counts: off (--no-callgrind)."
    missing = callgrind.available()
    if missing:
        print(f"{PROG}: callgrind unavailable ({missing}): timing alone", file=sys.stderr)
        return f"Instruction counts: not measured ({missing}); timing alone."
    if not names:
        return "Instruction counts: no counted case (norm and pos forward, attn decode) selected."
    procs = {t.label: (callgrind.start(t.root, names, out / f"callgrind-{t.label}"), out / f"callgrind-{t.label}")
             for t in (base, head)}
    try:
        counts = {label: callgrind.finish(proc, folder) for label, (proc, folder) in procs.items()}
    except RuntimeError as exc:  # valgrind's fault, not the code's: the timing verdicts already taken still stand
        print(f"{PROG}: callgrind failed ({exc}): timing alone", file=sys.stderr)
        return f"Instruction counts: failed ({exc}); timing alone."
    limit = 1 + args.callgrind_threshold / 100
    for r in rows:
        b, h = counts["base"].get(r["name"]), counts["head"].get(r["name"])
        if b and h:
            ratio = h / b
            r["callgrind"] = {"base": b, "head": h, "ratio": ratio,
                              "verdict": "regression" if ratio > limit else
                              "improvement" if ratio < 2 - limit else "unchanged"}
    return (f"Instructions per call (callgrind; norm and pos forward, attn decode): a regression above 1 + "
            f"{args.callgrind_threshold:g}%.")


def intended(head: Tree) -> str | None:
    message = git("log", "-1", "--format=%B", "HEAD", repo=head.root)
    return head.revision[:12] if INTENDED_MARKER in message and "+" not in head.revision else None


def writable(out: Path) -> Path:
    """The report folder, created and proven writable before any timing (a setup problem otherwise)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out).close()
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write the reports there ({exc.strerror or exc})") from None
    return out


def merge_base(rev: str, repo: Path = REPO) -> str:
    """The commit where HEAD left ``rev``'s line: what a pull request's own changes are measured against (in
    blockbench's repository, or the plugin's)."""
    resolve(rev, repo)  # an unknown revision is named as such, not as a merge-base failure
    try:
        return git("merge-base", rev, "HEAD", repo=repo)
    except Exception:
        raise SetupError(f"BASE={rev!r} and HEAD have no merge base (unrelated histories?)") from None


def run_check(args: argparse.Namespace) -> int:
    started = time.monotonic()
    of = args.base if args.merge_base else None
    cases = chosen_cases(args)
    confidence = case_confidence(tests_in([c.name for c in cases]))
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
    marked = intended(head) if args.honour_marker else None
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


def with_plugin(args: argparse.Namespace) -> None:
    """``args.plugin``: the plugin checkout to compare (``--plugin-path``, else the one around the working folder
    when that is not blockbench's own), its modules imported here; None to compare blockbench's revisions."""
    path = args.plugin_path
    if path is not None and not path.is_dir():
        raise UsageError(f"--plugin-path={path}: not a folder")
    top = plugin_root(path if path is not None else Path.cwd())
    if path is not None and top is None:
        raise UsageError(f"--plugin-path={path}: no pyproject.toml with [project.entry-points.\"blockbench.choices\"] "
                         "in a git checkout there or above")
    args.plugin = top if top is not None and top.resolve() != REPO.resolve() else None
    try:
        args.plugin_modules = load_head_plugin(args.plugin) if args.plugin else []
    except PluginError as exc:
        raise UsageError(str(exc)) from None


def run_history(folder: Path, case: str, threshold: float, out: Path | None) -> int:
    if not folder.is_dir():
        raise UsageError(f"--history {folder}: not a folder")
    table = history_table(folder, case)
    if table.empty:
        raise UsageError(f"--history: no stored run under {folder} has case {case!r}")
    path = out or folder / f"history-{case.replace('/', '_')}.png"
    if path.suffix != ".png":
        path = path / f"history-{case.replace('/', '_')}.png"
    print(history_figure(table, case, threshold, path))
    return 0


@command("regress")
def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        with_plugin(args)
        if args.history:
            return run_history(Path(args.history[0]), args.history[1], args.threshold, args.out)
        if args.list:
            print("\n".join(c.name for c in chosen_cases(args)))
            return 0
        return run_check(args)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
