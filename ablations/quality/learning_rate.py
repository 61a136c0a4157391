"""Which learning rate an arm trains at: its own tuned rate for the regime, or one rate shared by every arm.

An architecture ablation is fair only when each arm trains at its own best rate: one untuned rate favours whichever
arm it happens to suit (Narang et al. 2021 name untuned hyperparameters as the first reason modifications fail to
transfer). So ``train.lr`` is null by default and every arm takes the rate its regime's scan chose for it
(``train.tuned_lr[<train.name>].rates[<variant>]``, ``ablations.quality.lr_scan``); an arm the scan did not tune, or a
regime without a scan, takes ``train.shared_lr``. ``train.lr=X`` trains every arm at X, the shared-rate protocol.
Warm-up and schedule stay shared either way. Every quality row records the rate (``lr``) and where it came from
(``lr_source``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ablations.config.schema import TrainConfig, TunedRates
from components.config import ConfigError

# lr_source's values' first words, one per way an arm gets its rate.
SHARED, TUNED, UNTUNED, SCANNED = "shared", "tuned", "untuned", "scanned"


@dataclass(frozen=True)
class ArmRate:
    """An arm's rate and where it came from: ``source`` is one line for the rows' ``lr_source``."""

    lr: float
    source: str


def tuned_for(tc: TrainConfig) -> TunedRates | None:
    """The regime's tuned rates (``train.tuned_lr`` under the train option's name), or None where no scan tuned it."""
    return (tc.tuned_lr or {}).get(tc.name)


def arm_rate(tc: TrainConfig, variant: str) -> ArmRate:
    """The rate ``variant`` (a row's ``variant`` label: ``gpt2``, ``rope``, ``llama2-tied``) trains at under ``tc``."""
    if tc.lr is not None:
        return ArmRate(float(tc.lr), f"{SHARED}: train.lr={tc.lr:g} for every arm")
    tuned = tuned_for(tc)
    if tuned is not None and variant in tuned.rates:
        return ArmRate(float(tuned.rates[variant]), f"{TUNED}: train.tuned_lr.{tc.name} ({tuned.scan})")
    why = f"no scan tuned {variant} at train={tc.name}" if tuned is not None else f"no scan tuned train={tc.name}"
    return ArmRate(float(tc.shared_lr), f"{UNTUNED}: train.shared_lr={tc.shared_lr:g} ({why})")


def budget_rate(tc: TrainConfig, variant: str, factor: float, own: ArmRate) -> ArmRate:
    """The rate of ``variant``'s compute-curve run at ``factor`` x the steps: its per-budget rate where the scan found
    the best moving with the budget (``budget_rates``), else the arm's own (``own``)."""
    tuned = tuned_for(tc)
    if tc.lr is not None or tuned is None:
        return own
    by_budget = (tuned.budget_rates or {}).get(variant, {})
    key = budget_key(factor)
    if key in by_budget:
        return ArmRate(float(by_budget[key]), f"{TUNED} at {key}x the steps: train.tuned_lr.{tc.name} ({tuned.scan})")
    return own


def budget_key(factor: float) -> str:
    """A budget factor as ``budget_rates`` names it: three significant digits (``0.5``, ``4``, ``1.41``)."""
    return f"{float(factor):.3g}"


def with_rate(tc: TrainConfig, rate: float) -> TrainConfig:
    """``tc`` at one rate, the form a seed trains under (and its ledger key is taken from)."""
    return replace(tc, lr=float(rate))


def check_rates(tc: TrainConfig) -> None:
    """``train.lr``, ``train.shared_lr`` and every tuned rate positive; one line naming the key."""
    if tc.lr is not None and not tc.lr > 0:
        raise ConfigError(f"train.lr={tc.lr} must be > 0, or null for each arm's tuned rate (train.tuned_lr)")
    if not tc.shared_lr > 0:
        raise ConfigError(f"train.shared_lr={tc.shared_lr} must be > 0")
    for regime, tuned in (tc.tuned_lr or {}).items():
        named = {**{f"rates.{arm}": r for arm, r in tuned.rates.items()},
                 **{f"budget_rates.{arm}.{f}": r for arm, by in tuned.budget_rates.items() for f, r in by.items()}}
        for key, rate in named.items():
            if not (isinstance(rate, int | float) and rate > 0):
                raise ConfigError(f"train.tuned_lr.{regime}.{key}={rate} must be a positive learning rate")
