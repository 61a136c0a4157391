"""The report's top tier after the verdict block: one table per question, cost and quality, one row per choice, each
from the sweep the verdict reads (``ablations.report.verdicts.answers``), at most six columns. Every sweep's full
table ("What each choice buys") and sections follow under *Details*."""

from __future__ import annotations

import pandas as pd

from ablations.report.formatting import markdown_table
from ablations.report.verdicts import Answer

COST = ("train step ×", "decode ×", "params", "KV bytes/token")
QUALITY = ("Δ loss [CI]", "compute multiplier [CI]", "time to loss, measured", "transfer")


def _row(frame: pd.DataFrame, answer: Answer, sweep: str | None) -> pd.Series | None:
    if sweep is None or frame.empty:
        return None
    variant = dict(answer.variants).get(sweep)
    rows = frame[(frame["sweep"] == sweep) & (frame["variant"] == variant)]
    return rows.iloc[0] if len(rows) else None


def cost_table(found: list[Answer], frame: pd.DataFrame) -> str | None:
    rows = []
    for a in found:
        if not a.train and not a.decode:
            continue
        r = _row(frame, a, a.timed_in[0] if a.timed_in else None)
        rows.append({"choice": a.choice,
                     COST[0]: "; ".join(x.cell() for x in a.train) or "—",
                     COST[1]: "; ".join(x.cell() for x in a.decode) or "—",
                     COST[2]: r[COST[2]] if r is not None else "—",
                     COST[3]: r[COST[3]] if r is not None else "—",
                     "sweep": ", ".join(dict.fromkeys(a.timed_in))})
    return markdown_table(pd.DataFrame(rows)) if rows else None


def quality_table(found: list[Answer], frame: pd.DataFrame) -> str | None:
    rows = []
    for a in found:
        r = _row(frame, a, a.trained_in)
        if r is None:
            continue
        rows.append({"choice": a.choice, **{c: r[c] for c in QUALITY}, "sweep": a.trained_in})
    return markdown_table(pd.DataFrame(rows)) if rows else None


def answer_tables(found: list[Answer], frame: pd.DataFrame) -> list[str]:
    """``## Cost`` and ``## Quality``, each where the run measured it."""
    lines = []
    cost = cost_table(found, frame)
    if cost is not None:
        lines += ["## Cost", "", "Time ratios: variant over GPT-2's block, median [95% interval], per device; below "
                  "1 is faster.", "", cost, ""]
        kernels = [f"- **{a.choice}**, {r.device}: {r.kernel}." for a in found for r in a.train if r.kernel]
        if kernels:
            lines += ["Where a choice asks no more of the machine and still measures slower, the component it swaps "
                      "was timed alone (`component_*` rows):", "", *kernels, ""]
    quality = quality_table(found, frame)
    if quality is not None:
        lines += ["## Quality", "", "Δ loss: the final validation loss difference [Holm-level interval] and verdict; "
                  "compute multiplier: the training FLOPs GPT-2's block needs to reach the variant's loss, as a "
                  "multiple [its interval at the Δ's Holm level, so the two claim alike].", "", quality, ""]
    return lines
