"""The rows a claim is read from: the value a group's claim is about and its variant, the sweep the claim declares,
the comparison row of a flip and its quality summary."""

from __future__ import annotations

import pandas as pd

from blockbench import Choice, Claim
from components.baselines import BASELINES


def flip_value(choice: Choice) -> str:
    """The value a group's claim is about: Llama-2's, else the first value GPT-2's block is flipped to."""
    return choice.llama2 if choice.in_llama2 else choice.flips[0]


def flip_variant(choice: Choice) -> str:
    """The variant that moves ``choice`` alone from GPT-2's block to ``flip_value(choice)``."""
    return choice.value_name(flip_value(choice))


def sweep_of(choice: Choice, claim: Claim) -> str:
    """The sweep a claim's rows are read from first: the one it declares, else its group's own."""
    return claim.sweep or choice.group


def variant_row(cmp: pd.DataFrame, variant: str | list[str] | None = None, sweep: str | None = None,
                rows: pd.DataFrame | None = None) -> pd.Series | None:
    """The comparison row of a one-choice flip, from its own sweep when the run has it; of several variants, the
    first the run measured."""
    if cmp.empty:
        return None
    if isinstance(variant, list):
        found = (variant_row(cmp, v, sweep) for v in variant)
        return next((r for r in found if r is not None), None)
    cand = rows if rows is not None else cmp[cmp["variant"] == variant]
    cand = cand[cand["fwd"].notna() | cand["decode"].notna() | cand["fwd_flops"].notna()]
    if cand.empty:
        return None
    own = cand[cand["sweep"] == sweep]
    return (own if not own.empty else cand).iloc[0]


def quality_of(quality: pd.DataFrame | None, variant: str, sweep: str, metric: str = "val_loss") -> dict | None:
    """``variant``'s row of ``ablations.quality.stats.summarize`` against its sweep's baseline block (GPT-2's or
    Llama-2's: ``reference`` names it), from its sweep."""
    if quality is None or quality.empty:
        return None
    q = quality[(quality["variant"] == variant) & (quality["metric"] == metric)]
    if "reference" in q:
        q = q[q["reference"].isin(BASELINES)]
    if (q["sweep"] == sweep).any():
        q = q[q["sweep"] == sweep]
    if q.empty or pd.isna(q["mean"].iloc[0]):
        return None
    return q.iloc[0].to_dict()
