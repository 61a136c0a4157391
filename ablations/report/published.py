"""What the sources a choice's claim cites say of its loss, and whether this run's verdict agrees with them."""

from __future__ import annotations

import functools

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


@functools.cache
def no_worse_margin() -> float:
    """The harm a published "no worse" may still hide and agree: the default quality run's target (nats per token),
    the smallest difference it is sized to detect (conf/train/default.yaml ``target_mde``)."""
    from omegaconf import OmegaConf

    from ablations.config.paths import conf_dir
    return float(OmegaConf.load(conf_dir() / "train" / "default.yaml").target_mde)


def agreement(published: str | None, verdict: str | None, upper: float | None = None) -> str:
    """Whether this run's verdict agrees with the published one: a published "better" needs a measured better (no
    detectable difference is "not shown"); a published "no worse" is contradicted by a measured worse and agreed
    with only where the loss difference's upper end (``upper``) rules out a harm larger than ``no_worse_margin``."""
    if not published or not isinstance(verdict, str) or verdict not in ("better", "worse", NONE):
        return "—"
    if published == "better":
        return {"better": "agrees", NONE: "not shown", "worse": "disagrees"}[verdict]
    if verdict == "worse":
        return "disagrees"
    return "agrees" if upper is not None and not pd.isna(upper) and upper <= no_worse_margin() else "not shown"
