"""What a check leaves behind: the Markdown summary, the JSON report, each side's pytest-benchmark JSON, and
the figure of one case's ratio over stored runs."""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path

import pandas as pd

from ablations.measure.intervals import Interval
from ablations.regress.confirm import NOT_CONFIRMED
from ablations.regress.paired import NOT_JUDGED, even, rounds_to_judge

REPORT_JSON = "regress.json"
SUMMARY_MD = "summary.md"
SIDE_JSON = "{side}.benchmark.json"  # pytest-benchmark's format: `pytest-benchmark compare` reads them


def fmt_interval(c: dict) -> str:
    return f"{c['ratio']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}]"


def rounds_text(report: dict) -> str:
    """``12 paired rounds``, or the sequential rule: from the first look up to the budget."""
    low = report.get("min_rounds")
    if low is None or low >= report["rounds"]:
        return f"{report['rounds']} paired rounds"
    return (f"{low} to {report['rounds']} paired rounds (a case stops at a planned look once its interval straddles "
            "neither threshold edge; each look's interval widened so the coverage holds under that stopping)")


def head_text(revision: str) -> str:
    """What was timed as the head, truthfully: a commit, or the working tree with its uncommitted changes."""
    commit, _, dirty = revision.partition("+")
    return f"working tree with uncommitted changes on `{commit[:12]}`" if dirty else f"head `{commit[:12]}`"


def base_text(base: dict) -> str:
    """The base and how it was asked for: a revision, or the merge base of a branch and the head."""
    of = base.get("merge_base_of")
    how = f"merge base of `{of}` and HEAD" if of else f"`{base['asked']}`"
    return f"base `{base['revision'][:12]}` ({how})"


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


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def judging_rounds(c: dict, report: dict) -> int:
    """The rounds that would judge a case or group ``not judged`` (per case for a group): stored on the row, or
    estimated again from its interval as ``ablations.regress.paired.rounds_to_judge`` does."""
    if "rounds_to_judge" in c:
        return c["rounds_to_judge"]
    iv = Interval(c["ratio"], c["lo"], c["hi"], c.get("coverage", 0.95))
    rounds = c.get("rounds", report["rounds"])
    total = rounds_to_judge(iv, rounds, report["threshold_pct"] / 100)
    return even(-(-total // c["cases"])) if "cases" in c else total


def case_text(c: dict, report: dict | None = None) -> str:
    """One case's outcome in a line: its interval and verdict (with the rounds that would judge it, when it could not
    be judged and ``report`` is given), or why it was not timed."""
    if "ratio" in c:
        if c["verdict"] == NOT_JUDGED and (report is not None or "rounds_to_judge" in c):
            return f"{fmt_interval(c)} {NOT_JUDGED} (about {judging_rounds(c, report or {}):,} rounds would judge it)"
        return f"{fmt_interval(c)} {c['verdict']}"
    return f"{c['verdict']}: {c.get('reason') or c.get('error')}"


def not_judged_text(c: dict, report: dict) -> str:
    """Why a case (or group) has no verdict, and the rounds that would give it one."""
    pct = report["threshold_pct"]
    per = " per case" if "cases" in c else ""
    return (f"its 95% interval [{c['lo']:.3f}, {c['hi']:.3f}] is wider than the check can use (wider than the "
            f"{2 * pct / 100:.3f} between 1 − {pct:g}% and 1 + {pct:g}%); about {judging_rounds(c, report):,} "
            f"rounds{per} would judge it")


def not_judged_lines(report: dict, widest_first: bool = False) -> list[str]:
    """One line per case and group whose interval is too wide to judge at the threshold: neither a regression nor a
    pass (``ablations.regress.paired.judge``). ``widest_first``: the cases by the rounds that would judge them, most
    first, so a case whose rounds say nothing at all ([0.391, 11.851]) leads the many a little too wide."""
    cases = [c for c in report["cases"] if c.get("verdict") == NOT_JUDGED]
    if widest_first:
        cases.sort(key=lambda c: -judging_rounds(c, report))
    lines = [f"not judged: {c['name']}: {not_judged_text(c, report)}" for c in cases]
    lines += [f"not judged: {g['name']} ({g['cases']} cases, {g['rounds']} rounds pooled): {not_judged_text(g, report)}"
              for g in report.get("groups", []) if g["verdict"] == NOT_JUDGED]
    return lines


def counts(report: dict) -> dict:
    """The check counted by case, not by signal: a case regressed if any of its signals did (its time, its
    instructions); a failed case is one the head cannot run; a case not judged is neither a regression nor a pass
    (unless its instructions regressed); the rest passed. Groups are counted apart, and the signals besides."""
    out = {"cases": len(report["cases"]), "compared": 0, "regressed": 0, "passed": 0, "not_judged": 0,
           "not_confirmed": 0, "failed": 0, "not_compared": 0, "signals": {"time": 0, "instructions": 0}}
    for c in report["cases"]:
        verdict = c.get("verdict")
        if verdict == "not compared":
            out["not_compared"] += 1
            continue
        out["compared"] += 1
        time_signal = verdict == "regression"
        count_signal = (c.get("callgrind") or {}).get("verdict") == "regression"
        out["signals"]["time"] += time_signal
        out["signals"]["instructions"] += count_signal
        kind = ("failed" if verdict == "failure" else "regressed" if time_signal or count_signal else
                "not_judged" if verdict == NOT_JUDGED else "not_confirmed" if verdict == NOT_CONFIRMED else "passed")
        out[kind] += 1
    groups = report.get("groups", [])
    out["groups"] = {"groups": len(groups), "regressed": sum(g["verdict"] == "regression" for g in groups),
                     "not_judged": sum(g["verdict"] == NOT_JUDGED for g in groups),
                     "not_confirmed": sum(g["verdict"] == NOT_CONFIRMED for g in groups)}
    out["groups"]["passed"] = (len(groups) - out["groups"]["regressed"] - out["groups"]["not_judged"]
                               - out["groups"]["not_confirmed"])
    return out


def regressed_cases_text(n: dict) -> str:
    """``2 of 10 cases regressed (3 signals: 2 time, 1 instructions)`` from ``counts``: cases, then signals."""
    signals = {k: v for k, v in n["signals"].items() if v}
    said = (f" ({plural(sum(signals.values()), 'signal')}: {', '.join(f'{v} {k}' for k, v in signals.items())})"
            if signals else "")
    return f"{n['regressed']} of {plural(n['compared'], 'case')} regressed{said}"


def unconfirmed_text(n: dict) -> str:
    return f", {n['not_confirmed']} not confirmed" if n.get("not_confirmed") else ""


def confirmed_text(rows: list[dict], groups: list[dict]) -> str:
    """What the fresh process said of the time regressions it timed again: ``1 confirmed, 1 not confirmed``."""
    again = [r for r in [*rows, *groups] if "confirmation" in r]
    confirmed = sum(r["verdict"] == "regression" and "ratio" in r["confirmation"] for r in again)
    unconfirmed = sum(r["verdict"] == NOT_CONFIRMED for r in again)
    errors = sorted({r["confirmation"]["error"] for r in again if "error" in r["confirmation"]})
    text = f"{confirmed} confirmed, {unconfirmed} not confirmed"
    return text + "".join(f"; {e}: the regression stands" for e in errors)


def confirmation_clause(c: dict) -> str:
    """How the fresh process read a time regression (``; in a fresh process RATIO [LO, HI] VERDICT``), or why it did
    not (``; not timed again (failure)``); empty for a row it was not asked about."""
    second = c.get("confirmation") or {}
    if "ratio" in second:
        return f"; in a fresh process {fmt_interval(second)} {second['verdict']}"
    return f"; {second['error']}" if "error" in second else ""


def not_confirmed_lines(report: dict) -> list[str]:
    """One line per case and group that regressed by time in this process and not in the fresh one."""
    return [f"not confirmed: {c['name']}: {fmt_interval(c)} here{confirmation_clause(c)}"
            for c in [*report["cases"], *report.get("groups", [])] if c.get("verdict") == NOT_CONFIRMED]


def identical_text(report: dict) -> str:
    """The check of two sides with the same source: why nothing was timed and how to time it anyway."""
    same = report["identical_source"]
    return (f"no regression: head and base have byte-identical source in the timed packages "
            f"({plural(same['files'], 'file')} of {', '.join(same['packages'])}), so no case can differ; "
            "nothing was timed (--time-identical times them anyway)")


def failed_text(n: dict) -> str:
    return f", {n['failed']} failed (the head cannot run it)" if n["failed"] else ""


def regressed_text(report: dict) -> str:
    """What exit status 1 is made of, counted by case: ``2 of 10 cases regressed (3 signals: 2 time, 1
    instructions)``, with the failed cases and the groups that regressed when there are any."""
    n = counts(report)
    g = n["groups"]
    grouped = f"; {g['regressed']} of {plural(g['groups'], 'group')} regressed" if g["regressed"] else ""
    return f"{regressed_cases_text(n)}{failed_text(n)}{grouped}"


def headline(report: dict) -> str:
    """The summary's first sentence: the verdict, then the cases counted (regressed, with their signals; passed;
    not judged; failed), the groups likewise, and the cases not compared."""
    n = counts(report)
    g = n["groups"]
    word = "regression" if regression_lines(report) else "no regression"
    text = (f"**{word}**: {regressed_cases_text(n)}, {n['passed']} passed, {n['not_judged']} not judged"
            f"{unconfirmed_text(n)}{failed_text(n)}")
    if g["groups"]:
        text += (f"; {g['regressed']} of {plural(g['groups'], 'group')} regressed, {g['passed']} passed, "
                 f"{g['not_judged']} not judged{unconfirmed_text(g)}")
    if n["not_compared"]:
        text += f"; {plural(n['not_compared'], 'case')} not compared (below)"
    return text + "."


def not_compared_lines(report: dict) -> list[str]:
    """One line per case the base does not implement (or cannot run), with the reason: never a regression or an
    improvement, and never in a group's pooled rounds."""
    return [f"not compared: {c['name']}: {c['reason']}" for c in report["cases"] if c.get("verdict") == "not compared"]


def regression_lines(report: dict) -> list[str]:
    """One line per regressed case and signal, and per case the head cannot run: what exit status 1 means."""
    lines = []
    for c in report["cases"]:
        if c.get("verdict") == "failure":
            lines.append(f"failure: {c['name']}: {c['error']}")
        if c.get("verdict") == "regression":
            lines.append(f"regression: {c['name']}: time head/base {fmt_interval(c)} "
                         f"(> 1 + {report['threshold_pct']:g}%){confirmation_clause(c)}")
        cg = c.get("callgrind") or {}
        if cg.get("verdict") == "regression":
            lines.append(f"regression: {c['name']}: instructions head/base {cg['ratio']:.4f} "
                         f"(> 1 + {report['callgrind_threshold_pct']:g}%)")
    for g in report.get("groups", []):
        if g["verdict"] == "regression":
            lines.append(f"regression: {g['name']} ({g['cases']} cases, {g['rounds']} rounds pooled): time head/base "
                         f"{fmt_interval(g)} (> 1 + {report['threshold_pct']:g}%){confirmation_clause(g)}")
    return lines


def markdown(report: dict) -> str:
    if report.get("identical_source"):
        return (f"## Performance check: {head_text(report['head']['revision'])} against {base_text(report['base'])}"
                f"\n\n**{identical_text(report).replace(': ', '**: ', 1)}.\n")
    groups = report.get("groups", [])
    skipped = not_compared_lines(report)
    unjudged = not_judged_lines(report, widest_first=True)
    unconfirmed = not_confirmed_lines(report)
    pct = f"{report['threshold_pct']:g}%"
    lines = [
        f"## Performance check: {head_text(report['head']['revision'])} against {base_text(report['base'])}", "",
        f"{headline(report)} Time: median head/base ratio over "
        f"{rounds_text(report)} with its distribution-free interval, 95% family-wise over cases and groups (each at "
        f"{100 * report['case_confidence']:.3g}%, Bonferroni); a regression when the interval's low end is above "
        f"1 + {pct}, an improvement when its high end is below 1 − {pct}, not judged when it is wider than the "
        f"{2 * report['threshold_pct'] / 100:.3f} between them and neither. "
        f"{report['callgrind_note']}", "",
        "| case | time head/base [95% CI] | verdict | rounds | base ms | instructions head/base | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in report["cases"]:
        if "ratio" not in c:
            lines.append(f"| `{c['name']}` | — | {case_text(c)} | — | — | — | — |")
            continue
        cg = c.get("callgrind") or {}
        cg_ratio = f"{cg['ratio']:.4f}" if "ratio" in cg else "—"
        # Sequential rounds: a case that ran out of rounds with its interval still across a threshold edge says so.
        rounds = f"{c.get('rounds', report['rounds'])}{' (budget)' if c.get('stopped') == 'budget' else ''}"
        lines.append(f"| `{c['name']}` | {fmt_interval(c)} | {c['verdict']} | {rounds} | "
                     f"{1e3 * c['base_median_s']:.3g} | {cg_ratio} | {cg.get('verdict', '—')} |")
    if groups:
        lines += ["", "Groups: every variant of a component in one mode, their cases' rounds pooled (a slowdown in "
                  "code they all run moves them all; the pooled interval is at the same family-wise level).", "",
                  "| group | cases | rounds pooled | time head/base [95% CI] | verdict |", "|---|---|---|---|---|"]
        lines += [f"| `{g['name']}` | {g['cases']} | {g['rounds']} | {fmt_interval(g)} | {g['verdict']} |"
                  for g in groups]
    if unjudged:
        lines += ["", f"Not judged: an interval wider than the band between 1 − {pct} and 1 + {pct} cannot say the "
                  "case is unchanged within the threshold, wherever it lies, so these count neither as a regression "
                  "nor as a pass. The rounds that would judge each are an estimate at the spread measured, the "
                  "interval narrowing as 1/sqrt(rounds) (`--rounds`); the cases widest first.", "",
                  *[f"- {line}" for line in unjudged]]
    if unconfirmed:
        lines += ["", "Not confirmed: a time regression in this process that a fresh process, timing the case (or the "
                  "group's cases) again with the same settings, did not flag: what one process fixes for all its "
                  "rounds (memory placement, a neighbour's load) moved it, so it counts neither as a regression nor "
                  "as a pass (`ablations/regress/confirm.py`).", "", *[f"- {line}" for line in unconfirmed]]
    if skipped:
        lines += ["", "Not compared: the base does not implement what these cases ask for, or cannot run them, so "
                  "their time would compare unlike things; they are never counted as a regression or an "
                  "improvement (`ablations/regress/comparable.py`).", "", *[f"- {line}" for line in skipped]]
    lines += ["", f"Wall time {report['wall_s']:.0f} s; torch {report['torch']}, {report['threads']} thread(s); "
              f"{report['intended_note']}".rstrip("; "), ""]
    return "\n".join(lines)


def write_all(report: dict, sides: dict[str, dict], out: Path) -> None:
    """``out``: regress.json, summary.md, base/head pytest-benchmark JSON; the summary also goes to
    ``$GITHUB_STEP_SUMMARY`` when that is set (GitHub Actions shows it on the run's page)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_JSON).write_text(json.dumps(report, indent=1))
    text = markdown(report)
    (out / SUMMARY_MD).write_text(text)
    for side, data in sides.items():
        (out / SIDE_JSON.format(side=side)).write_text(json.dumps(data, indent=1))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a") as f:
            f.write(text + "\n")


def benchmark_json(report: dict, side: str, times: dict[str, list[float]]) -> dict:
    """One side's per-round seconds in pytest-benchmark's JSON layout, built with its own ``Stats``."""
    from pytest_benchmark import __version__
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info
    from pytest_benchmark.stats import Stats

    benchmarks = []
    for name, data in times.items():
        s = Stats()
        for t in data:
            s.update(t)
        component, _, mode = name.rpartition("/")
        benchmarks.append({
            "group": f"{component.split('/')[0]} {mode}", "name": name, "fullname": f"ablations.regress::{name}",
            "params": None, "param": None, "extra_info": {"side": side, "rounds_paired_with": "the other side"},
            "options": {"rounds": report["rounds"], "min_run_time": report["min_run_time"]},
            "stats": {**s.as_dict(), "data": data, "iterations": 1},
        })
    rev = report[side]["revision"]
    return {
        "machine_info": pytest_benchmark_generate_machine_info(),
        "commit_info": {"id": rev.split("+")[0], "dirty": "+" in rev, "project": "blockbench"},
        "benchmarks": benchmarks,
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(),
        "version": __version__,
    }


def history_table(folder: Path, case: str) -> pd.DataFrame:
    """``case`` in every ``regress.json`` under ``folder``, oldest first."""
    rows = []
    for path in sorted(folder.rglob(REPORT_JSON)):
        report = json.loads(path.read_text())
        for c in [*report.get("cases", []), *report.get("groups", [])]:
            if c["name"] == case and "ratio" in c:
                series = f"{report.get('machine', 'machine not recorded')}; torch {report.get('torch', '?')}"
                rows.append({"run": path.parent.name, "time": report["time"], "head": report["head"]["revision"][:12],
                             "series": series, "ratio": c["ratio"], "lo": c["lo"], "hi": c["hi"],
                             "verdict": c["verdict"]})
    return pd.DataFrame(rows).sort_values("time", ignore_index=True) if rows else pd.DataFrame()


def history_figure(table: pd.DataFrame, case: str, threshold_pct: float, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(max(5.0, 0.45 * len(table) + 2), 3.6))
    x = range(len(table))
    # Runs on different machines or torch versions are different series (a ratio moves with either): each its
    # own line, never one line joining them.
    series = list(dict.fromkeys(table["series"]))
    for i, name in enumerate(series):
        own = [j for j in x if table["series"].iloc[j] == name]
        ax.plot(own, table["ratio"].iloc[own], color=f"C{i}", lw=1, alpha=0.6, label=name)
    ax.errorbar(x, table["ratio"], yerr=[table["ratio"] - table["lo"], table["hi"] - table["ratio"]], fmt="none",
                ecolor="0.55", capsize=3)
    sns.scatterplot(x=list(x), y=table["ratio"], hue=table["verdict"], ax=ax, s=40, zorder=3,
                    palette={"regression": "#d62728", "improvement": "#2ca02c", "unchanged": "#1f77b4",
                             NOT_JUDGED: "#7f7f7f", NOT_CONFIRMED: "#ff7f0e"})
    for y, style in ((1.0, "-"), (1 + threshold_pct / 100, "--"), (1 - threshold_pct / 100, "--")):
        ax.axhline(y, color="0.3", lw=0.8, ls=style)
    ax.set_xticks(list(x), [f"{r}\n{h}" for r, h in zip(table["run"], table["head"], strict=True)], fontsize=7,
                  rotation=45, ha="right")
    ax.set_ylabel("head / base time (median, 95% CI)")
    ax.set_title(f"{case}: paired ratio per stored run (dashed: ±{threshold_pct:g}%)", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
