"""One line per case and group: its interval and verdict, why it was not judged, not confirmed or not compared,
and what regressed; what the command prints and the summary lists."""

from __future__ import annotations

from ablations.measure.intervals import Interval
from ablations.regress.case_counts import plural
from ablations.regress.confirm import NOT_CONFIRMED
from ablations.regress.paired import NOT_JUDGED, even, rounds_to_judge


def fmt_interval(case: dict) -> str:
    return f"{case['ratio']:.3f} [{case['lo']:.3f}, {case['hi']:.3f}]"


def judging_rounds(case: dict, report: dict) -> int:
    """The rounds that would judge a case or group ``not judged`` (per case for a group): stored on the row, or
    estimated again from its interval as ``ablations.regress.paired.rounds_to_judge`` does."""
    if "rounds_to_judge" in case:
        return case["rounds_to_judge"]
    iv = Interval(case["ratio"], case["lo"], case["hi"], case.get("coverage", 0.95))
    rounds = case.get("rounds", report["rounds"])
    total = rounds_to_judge(iv, rounds, report["threshold_pct"] / 100)
    return even(-(-total // case["cases"])) if "cases" in case else total


def case_text(case: dict, report: dict | None = None) -> str:
    """One case's outcome in a line: its interval and verdict (with the rounds that would judge it, when it could not
    be judged and ``report`` is given), or why it was not timed."""
    if "ratio" in case:
        if case["verdict"] == NOT_JUDGED and (report is not None or "rounds_to_judge" in case):
            rounds = judging_rounds(case, report or {})
            return f"{fmt_interval(case)} {NOT_JUDGED} (about {rounds:,} rounds would judge it)"
        return f"{fmt_interval(case)} {case['verdict']}"
    return f"{case['verdict']}: {case.get('reason') or case.get('error')}"


def not_judged_text(case: dict, report: dict) -> str:
    """Why a case (or group) has no verdict, and the rounds that would give it one."""
    pct = report["threshold_pct"]
    per = " per case" if "cases" in case else ""
    return (f"its 95% interval [{case['lo']:.3f}, {case['hi']:.3f}] is wider than the check can use (wider than the "
            f"{2 * pct / 100:.3f} between 1 − {pct:g}% and 1 + {pct:g}%); about {judging_rounds(case, report):,} "
            f"rounds{per} would judge it")


def not_judged_lines(report: dict, widest_first: bool = False) -> list[str]:
    """One line per case and group whose interval is too wide to judge at the threshold: neither a regression nor a
    pass (``ablations.regress.paired.judge``). ``widest_first``: the cases by the rounds that would judge them, most
    first, so a case whose rounds say nothing at all ([0.391, 11.851]) leads the many a little too wide."""
    cases = [case for case in report["cases"] if case.get("verdict") == NOT_JUDGED]
    if widest_first:
        cases.sort(key=lambda case: -judging_rounds(case, report))
    lines = [f"not judged: {case['name']}: {not_judged_text(case, report)}" for case in cases]
    lines += [f"not judged: {g['name']} ({g['cases']} cases, {g['rounds']} rounds pooled): {not_judged_text(g, report)}"
              for g in report.get("groups", []) if g["verdict"] == NOT_JUDGED]
    return lines


def confirmed_text(rows: list[dict], groups: list[dict]) -> str:
    """What the fresh process said of the time regressions it timed again: ``1 confirmed, 1 not confirmed``."""
    again = [r for r in [*rows, *groups] if "confirmation" in r]
    confirmed = sum(r["verdict"] == "regression" and "ratio" in r["confirmation"] for r in again)
    unconfirmed = sum(r["verdict"] == NOT_CONFIRMED for r in again)
    errors = sorted({r["confirmation"]["error"] for r in again if "error" in r["confirmation"]})
    text = f"{confirmed} confirmed, {unconfirmed} not confirmed"
    return text + "".join(f"; {e}: the regression stands" for e in errors)


def confirmation_clause(case: dict) -> str:
    """How the fresh process read a time regression (``; in a fresh process RATIO [LO, HI] VERDICT``), or why it did
    not (``; not timed again (failure)``); empty for a row it was not asked about."""
    second = case.get("confirmation") or {}
    if "ratio" in second:
        return f"; in a fresh process {fmt_interval(second)} {second['verdict']}"
    return f"; {second['error']}" if "error" in second else ""


def not_confirmed_lines(report: dict) -> list[str]:
    """One line per case and group that regressed by time in this process and not in the fresh one."""
    return [f"not confirmed: {case['name']}: {fmt_interval(case)} here{confirmation_clause(case)}"
            for case in [*report["cases"], *report.get("groups", [])] if case.get("verdict") == NOT_CONFIRMED]


def identical_text(report: dict) -> str:
    """The check of two sides with the same source: why nothing was timed and how to time it anyway."""
    same = report["identical_source"]
    return (f"no regression: head and base have byte-identical source in the timed packages "
            f"({plural(same['files'], 'file')} of {', '.join(same['packages'])}), so no case can differ; "
            "nothing was timed (--time-identical times them anyway)")


def not_compared_lines(report: dict) -> list[str]:
    """One line per case the base does not implement (or cannot run), with the reason: never a regression or an
    improvement, and never in a group's pooled rounds."""
    return [f"not compared: {case['name']}: {case['reason']}" for case in report["cases"]
            if case.get("verdict") == "not compared"]


def regression_lines(report: dict) -> list[str]:
    """One line per regressed case and signal, and per case the head cannot run: what exit status 1 means."""
    lines = []
    for case in report["cases"]:
        if case.get("verdict") == "failure":
            lines.append(f"failure: {case['name']}: {case['error']}")
        if case.get("verdict") == "regression":
            lines.append(f"regression: {case['name']}: time head/base {fmt_interval(case)} "
                         f"(> 1 + {report['threshold_pct']:g}%){confirmation_clause(case)}")
        cg = case.get("callgrind") or {}
        if cg.get("verdict") == "regression":
            lines.append(f"regression: {case['name']}: instructions head/base {cg['ratio']:.4f} "
                         f"(> 1 + {report['callgrind_threshold_pct']:g}%)")
    for g in report.get("groups", []):
        if g["verdict"] == "regression":
            lines.append(f"regression: {g['name']} ({g['cases']} cases, {g['rounds']} rounds pooled): time head/base "
                         f"{fmt_interval(g)} (> 1 + {report['threshold_pct']:g}%){confirmation_clause(g)}")
    return lines
