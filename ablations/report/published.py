"""What the sources a choice's claim cites say of its loss, and whether this run's verdict agrees with them."""

from __future__ import annotations

import pandas as pd

from ablations.results.row_arch import arch_from_row
from blockbench import choices

GPT2 = "gpt2"
NONE = "no detectable difference"


def published_loss(variant_row: pd.Series, baseline: str) -> str | None:
    """The cited sources' verdict on the loss of the one choice this variant moves from its baseline, if any."""
    arch = arch_from_row(variant_row)
    moved = [choice for choice in choices() if not choice.has(arch, choice.gpt2 if baseline == GPT2 else choice.llama2)]
    if len(moved) != 1:
        return None
    choice = moved[0]
    value = getattr(arch, choice.group).name
    claim = (choice.value_claims.get(value) if value in choice.value_claims
             else choice.claim if value == choice.llama2 else None)
    return claim.loss if claim is not None else None


def agreement(published: str | None, verdict: str | None, upper: float | None, margin: float) -> str:
    """Whether this run's verdict agrees with the published one: a published "better" needs a measured better (no
    detectable difference is "not shown"); a published "no worse" is contradicted by a measured worse and agreed
    with only where the loss difference's upper end (``upper``) rules out a harm larger than ``margin`` (the run's
    recorded ``ReportInputs.no_worse_margin``)."""
    if not published or not isinstance(verdict, str) or verdict not in ("better", "worse", NONE):
        return "—"
    if published == "better":
        return {"better": "agrees", NONE: "not shown", "worse": "disagrees"}[verdict]
    if verdict == "worse":
        return "disagrees"
    return "agrees" if upper is not None and not pd.isna(upper) and upper <= margin else "not shown"
