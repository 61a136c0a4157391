"""The check counted by case, not by signal, and the sentences that say those counts (the summary's headline, the
line that explains exit status 1)."""

from __future__ import annotations

from ablations.regress.confirm import NOT_CONFIRMED
from ablations.regress.paired import NOT_JUDGED


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def counts(report: dict) -> dict:
    """The check counted by case, not by signal: a case regressed if any of its signals did (its time, its
    instructions); a failed case is one the head cannot run; a case not judged is neither a regression nor a pass
    (unless its instructions regressed); the rest passed. Groups are counted apart, and the signals besides."""
    out = {"cases": len(report["cases"]), "compared": 0, "regressed": 0, "passed": 0, "not_judged": 0,
           "not_confirmed": 0, "failed": 0, "not_compared": 0, "signals": {"time": 0, "instructions": 0}}
    for case in report["cases"]:
        verdict = case.get("verdict")
        if verdict == "not compared":
            out["not_compared"] += 1
            continue
        out["compared"] += 1
        time_signal = verdict == "regression"
        count_signal = (case.get("callgrind") or {}).get("verdict") == "regression"
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


def failed_text(n: dict) -> str:
    return f", {n['failed']} failed (the head cannot run it)" if n["failed"] else ""


def regressed_text(report: dict) -> str:
    """What exit status 1 is made of, counted by case: ``2 of 10 cases regressed (3 signals: 2 time, 1
    instructions)``, with the failed cases and the groups that regressed when there are any."""
    n = counts(report)
    g = n["groups"]
    grouped = f"; {g['regressed']} of {plural(g['groups'], 'group')} regressed" if g["regressed"] else ""
    return f"{regressed_cases_text(n)}{failed_text(n)}{grouped}"
