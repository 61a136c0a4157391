"""The Markdown summary of a check (``summary.md``, and GitHub's step summary): its sides, headline, one row per
case and group, and why any case was not judged, not confirmed or not compared."""

from __future__ import annotations

from ablations.regress.case_counts import counts, failed_text, plural, regressed_cases_text, unconfirmed_text
from ablations.regress.outcome_lines import (
    case_text,
    fmt_interval,
    identical_text,
    not_compared_lines,
    not_confirmed_lines,
    not_judged_lines,
    regression_lines,
)


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


def markdown(report: dict) -> str:
    """The summary: the sides and the headline, a row per case and per group, then why any case or group was not
    judged, not confirmed or not compared; for sides with the same source, why nothing was timed."""
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
    for case in report["cases"]:
        if "ratio" not in case:
            lines.append(f"| `{case['name']}` | — | {case_text(case)} | — | — | — | — |")
            continue
        cg = case.get("callgrind") or {}
        cg_ratio = f"{cg['ratio']:.4f}" if "ratio" in cg else "—"
        # Sequential rounds: a case that ran out of rounds with its interval still across a threshold edge says so.
        rounds = f"{case.get('rounds', report['rounds'])}{' (budget)' if case.get('stopped') == 'budget' else ''}"
        lines.append(f"| `{case['name']}` | {fmt_interval(case)} | {case['verdict']} | {rounds} | "
                     f"{1e3 * case['base_median_s']:.3g} | {cg_ratio} | {cg.get('verdict', '—')} |")
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
