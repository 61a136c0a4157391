"""One line per case and group: its interval and verdict, why it was not judged, not confirmed or not compared,
and what regressed; what the command prints and the summary lists."""

from __future__ import annotations

from ablations.measure.intervals import Interval
from ablations.regress.case_counts import plural
from ablations.regress.confirm import NOT_CONFIRMED
from ablations.regress.paired import NOT_JUDGED, even, rounds_to_judge


def fmt_interval(c: dict) -> str:
    return f"{c['ratio']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}]"


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
