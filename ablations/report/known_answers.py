"""The multiplier's known answers in the report (``ablations.quality.worth``): their table, and the report's first
lines when one misses its multiple."""

from __future__ import annotations

import pandas as pd

from ablations.quality.worth import HOLDS, MISSES, known_answers, known_verdict, untrusted
from ablations.report.formatting import markdown_table


def known_answer_table(worth: pd.DataFrame) -> str | None:
    """The known answers: per baseline curve, each row with the multiple it must read and what it checks."""
    known = known_answers(worth)
    if known.empty:
        return None
    known = known.sort_values(["sweep", "d_model", "train_steps", "expected"], kind="stable")
    frame = pd.DataFrame({
        "sweep": known["sweep"], "quality width": known["d_model"].map(_int_or_dash),
        "steps": known["train_steps"].map(_int_or_dash),
        "corpus": known["corpus"].map(lambda corpus: f"`{str(corpus)[:12]}`" if corpus else "—"),
        "checks": known["checks"], "must read": known["expected"].map(lambda e: f"{e:.3g}×"),
        "multiplier in steps [95% CI]": known["k_steps_text"], "seeds": known["n"],
        "holds it": known["calibrated"].map(lambda b: {HOLDS: "yes", MISSES: "NO"}.get(known_verdict(b),
                                                                                  "no interval (1 seed)")),
    })
    return markdown_table(frame.reset_index(drop=True))


def _int_or_dash(x: float) -> str:
    return "—" if pd.isna(x) else f"{int(x)}"


def trust_lines(worth: pd.DataFrame) -> list[str]:
    """The report's first lines when a known answer misses its multiple, or has no interval to hold it in: the
    multipliers are not trusted."""
    failed = untrusted(worth)
    if failed.empty:
        return []
    verdicts = failed["calibrated"].map(known_verdict)
    total = len(known_answers(worth))
    counts = [f"{n} of {total} known answers {what[n == 1]}"
              for n, what in ((int((verdicts == MISSES).sum()), ("miss the multiple they must read",
                                                                  "misses the multiple it must read")),
                              (int((verdicts != MISSES).sum()), ("have one seed, no interval to judge",
                                                                  "has one seed, no interval to judge"))) if n]
    which = "; ".join(f"{_where(r)}: {r['variant']} reads {r['k_steps_text']}" for _, r in failed.head(4).iterrows())
    more = f" and {len(failed) - 4} more" if len(failed) > 4 else ""
    return [f"**The compute multipliers in this report are not trusted:** {'; '.join(counts)} ({which}{more}; "
            "the known-answer table under *What each choice buys*).", ""]


def _where(r: pd.Series) -> str:
    """A curve's place: its sweep, quality width, corpus and steps."""
    parts = [str(r["sweep"])]
    if not pd.isna(r["d_model"]):
        parts.append(f"d={int(r['d_model'])}")
    if r["corpus"]:
        parts.append(f"`{str(r['corpus'])[:8]}`")
    if not pd.isna(r["train_steps"]):
        parts.append(f"{int(r['train_steps'])} steps")
    return " ".join(parts)



def regime_line(worth: pd.DataFrame) -> str | None:
    """Where the multipliers are read: per curve, the baseline's training bytes per parameter and its loss drop per
    doubling of compute (``worth.regime``), so that no multiplier is read as a trained model's."""
    rows = worth[worth["expected"].isna()] if not worth.empty else worth
    if rows.empty:
        return None
    # In training order, shortest first: the rows come in point order, which a point's id sets.
    curves = rows.drop_duplicates(["sweep", "d_model", "corpus", "train_steps"]).sort_values(
        ["sweep", "d_model", "train_steps"], kind="stable")
    parts = [f"{_where(r)}: {r['bytes_per_param']:.3g} bytes per parameter, " + _drop(r["drop_per_doubling"])
             for _, r in curves.iterrows()]
    unit = " (nats per token)" if curves["drop_per_doubling"].notna().any() else ""
    return "Where each curve reads its multipliers: " + "; ".join(parts) + unit + "."


def _drop(per_doubling: float) -> str:
    """The baseline's loss drop per doubling, or why there is none (a curve of fewer than two budgets)."""
    if pd.isna(per_doubling):
        return "no drop per doubling of compute (the curve has no 2× knot)"
    return f"the baseline's loss dropping {per_doubling:.2f} per doubling of compute"
