"""``blockbench compare OLD.json NEW.json``: what moved between two reports' ``summary.json`` files
(``ablations.report.summary_json``), choice by choice, and whether any verdict changed.

A verdict is a time ratio's reading on a device (faster, slower, no measurable difference) or a loss difference's
verdict. Exit status: 0 no verdict changed, 1 one did (each printed), 2 a file is missing, unreadable or not a
summary of this schema version. Numbers that moved within an unchanged verdict are printed, never a failure: the
interval already says how far they may move.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ablations.config.errors import UsageError
from ablations.results.summary_schema import VERSION


def load_summary(path: Path) -> dict[str, Any]:
    try:
        content = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (a report's summary.json)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(content, dict) or content.get("schema_version") != VERSION:
        raise UsageError(f"{path}: not a blockbench summary of schema_version {VERSION}")
    return content


def _readings(entry: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each verdict of one choice, by what it is about: (reading, the numbers behind it)."""
    out = {}
    for key in ("train_step", "decode_step"):
        for r in entry.get(key) or []:
            out[f"{key.replace('_', ' ')} on {r['device']}"] = (r["reading"], f"{r['value']:.3f}× [{r['lo']:.3f}, "
                                                                             f"{r['hi']:.3f}]")
    loss = entry.get("loss")
    if loss:
        interval = "" if loss["lo"] is None else f" [{loss['lo']:+.3f}, {loss['hi']:+.3f}]"
        # Keyed by what it is, not where: a verdict that changed with its regime is still a changed verdict.
        out["loss"] = (loss["verdict"], f"Δ {loss['diff']:+.3f}{interval} at {loss['regime']}")
    return out


def compare_summaries(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], int]:
    """The lines to print and the number of verdicts that changed."""
    before = {c["choice"]: _readings(c) for c in old["choices"]}
    after = {c["choice"]: _readings(c) for c in new["choices"]}
    lines, changed = [], 0
    for choice in dict.fromkeys([*before, *after]):
        if choice not in after or choice not in before:
            lines.append(f"note      {choice}: only in {'OLD' if choice not in after else 'NEW'}")
            continue
        for what in dict.fromkeys([*before[choice], *after[choice]]):
            a, b = before[choice].get(what), after[choice].get(what)
            if a is None or b is None:
                lines.append(f"note      {choice}, {what}: only in {'OLD' if b is None else 'NEW'}")
            elif a[0] != b[0]:
                changed += 1
                lines.append(f"CHANGED   {choice}, {what}: {a[0]} ({a[1]}) -> {b[0]} ({b[1]})")
            elif a[1] != b[1]:
                lines.append(f"moved     {choice}, {what}: {a[1]} -> {b[1]} (still {b[0]})")
    verdict = f"FAIL: {changed} verdict(s) changed" if changed else "OK: no verdict changed"
    return [*lines, verdict], changed
