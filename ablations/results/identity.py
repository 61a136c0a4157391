"""A point's identity: every setting that can change its numbers, and nothing that cannot.

The identity is the resolved config less where and how to run (``out``, ``figures``, ``allow_parallel_timing``, Hydra's
own node) and less what a newer harness added at a setting that changes nothing: a choice group that neither GPT-2 nor
Llama-2 varies (``gpt2 == llama2`` in its declaration, e.g. QK-norm) at its default config, any choice setting declared
``field(metadata={"neutral": True})`` at its default, the sequential-rounds profile settings when off, and the quality
protocol's newer train settings at the values that train as points without them did. So adding such a group or setting
leaves the identity of every existing point unchanged, and run folders written before it stay reusable.

A plugin (``components.plugins``) enters the identity, as ``plugins: {name: version}``, only where it shapes the
point: the point takes a value it registered, or moves a group it declared off GPT-2's value. So a new version of
that plugin is a new point, and installing an unrelated plugin changes no identity.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ablations.config.schema import RATE_SETTINGS, train_default
from blockbench import choices
from components.plugins import shaping

# Settings that say where and how to run, not what is measured.
IDENTITY_EXCLUDES = ("out", "figures", "allow_parallel_timing", "hydra", "logger")
# Run settings added after points were first written, at the value that changes nothing they measured.
NEUTRAL_RUN_SETTINGS = {"baseline": {"name": "gpt2"}}
# Profile settings added after points were first written, at the value that changes nothing (fixed rounds).
NEUTRAL_PROFILE_SETTINGS = {"target_halfwidth": None, "min_rounds": None, "max_rounds": None,
                            # a point written without the scope held its target everywhere: where the headline
                            # scope skips, it was measured more precisely than asked, never less
                            "target_scope": "headline",
                            # newer measurement families, on: a point written without one lacks only its rows
                            "quality_step": True, "components": True,
                            # decode timed eagerly, as every point before graphs was
                            "graphs": "off"}
# Train settings added after points were first written, at the value that trains as points without them did (fixed
# seeds, one global init stream, the final loss on the curve's windows, no learning-rate check).
# Train settings added after the seed ledger's arms were first named: left out of an arm's id at these values too
# (ablations.quality.ledger), so a resumed sweep finds its seeds.
NEUTRAL_ARM_SETTINGS = {"precision": "float32", "attention_core": "same", "compile": False, "deterministic": False,
                        "schedule": "cosine"}
NEUTRAL_TRAIN_SETTINGS = {"target_mde": None, "min_seeds": None, "max_seeds": None, "common_init": False,
                          "final_eval_batches": None, "lr_check": False, "average_last": 0.0, "budgets": [],
                          "budget_seeds": None, "check_budgets": [], **NEUTRAL_ARM_SETTINGS,
                          # a point written before the rate settings trained at its lr, as their defaults do; a scan
                          # without confirmation seeds is the scan before them
                          **{name: train_default(name) for name in RATE_SETTINGS}, "lr_scan_confirm_seeds": []}
# Train settings the run sets from its whole sweep rather than from the point (the family of comparisons its seeds'
# stopping rule is held to; the lengths a wsd run also trains as branches, which change no result): never part of a
# point's identity, at any value.
SWEEP_TRAIN_SETTINGS = ("family", "branch_steps")
# Data settings added after points were first written, at the value that reads the bytes points without them read
# (auto is bytes for every file but an llm.c shard, which no such point could have trained on as tokens; the stdlib
# corpus is what an empty data.path read without data.corpus).
NEUTRAL_DATA_SETTINGS = {"format": "auto", "val_path": "", "vocab_size": None, "corpus": "stdlib"}


def _without_neutral(config: type, group: dict[str, Any]) -> dict[str, Any]:
    neutral = {f.name: f.default for f in dataclasses.fields(config) if f.metadata.get("neutral")}
    return {k: v for k, v in group.items() if not (k in neutral and v == neutral[k])}


def _one_rate(train: dict[str, Any]) -> dict[str, Any]:
    """The rate settings as far as they shape training: a point that does not scan ignores the scan's settings, a
    point at one ``lr`` for every arm ignores the shared and tuned rates, and a regime no scan tuned trains every arm
    at ``shared_lr``, exactly as ``lr`` at that value did: the same identity. Where a scan tuned the regime, or the
    point scans, its rate settings are part of the identity."""
    if not train.get("lr_scan"):
        train = {k: v for k, v in train.items() if not k.startswith("lr_scan")}
    tuned = (train.get("tuned_lr") or {}).get(train.get("name"))
    if train.get("lr") is not None and not train.get("lr_scan"):  # one rate for every arm: no other rate plays a part
        return {k: v for k, v in train.items() if k not in ("shared_lr", "tuned_lr")}
    if tuned or train.get("lr_scan"):
        return train
    shared = train.get("shared_lr", train_default("shared_lr"))
    return {**{k: v for k, v in train.items() if k not in ("shared_lr", "tuned_lr")}, "lr": shared}


def without_moot_settings(train: dict[str, Any]) -> dict[str, Any]:
    """``train`` less the settings that change nothing where they stand: ``deterministic`` where the step is eager
    (``compile`` false; the eager step reruns bit for bit with or without it, ``train.deterministic``) and
    ``cooldown`` under the cosine schedule (only wsd cools down), so a seed or point is the same either way."""
    return {k: v for k, v in train.items() if not (k == "deterministic" and train.get("compile") is False)
            and not (k == "cooldown" and train.get("schedule", "cosine") == "cosine")}


def point_identity(cfg: DictConfig) -> dict[str, Any]:
    # Resolved without the excluded keys: Hydra's node has values only a running job has (hydra.job.num).
    kept = OmegaConf.masked_copy(cfg, [k for k in cfg if k not in IDENTITY_EXCLUDES])
    resolved = OmegaConf.to_container(kept, resolve=True, enum_to_str=True)
    identity = {k: v for k, v in resolved.items() if not (k in NEUTRAL_RUN_SETTINGS and NEUTRAL_RUN_SETTINGS[k] == v)}
    if isinstance(identity.get("train"), dict):
        identity["train"] = without_moot_settings(identity["train"])
    for key, neutral in (("profile", NEUTRAL_PROFILE_SETTINGS), ("train", NEUTRAL_TRAIN_SETTINGS),
                         ("data", NEUTRAL_DATA_SETTINGS)):
        if isinstance(identity.get(key), dict):
            identity[key] = {k: v for k, v in identity[key].items() if not (k in neutral and neutral[k] == v)}
    if isinstance(identity.get("train"), dict):
        identity["train"] = {k: v for k, v in _one_rate(identity["train"]).items() if k not in SWEEP_TRAIN_SETTINGS}
    for choice in choices():
        if not isinstance(identity.get(choice.group), dict):
            continue
        group = _without_neutral(choice.config, identity[choice.group])
        if not choice.in_llama2 and group == _without_neutral(choice.config, dataclasses.asdict(choice.config())):
            del identity[choice.group]
        else:
            identity[choice.group] = group
    values = {choice.group: str(resolved[choice.group]["name"]) for choice in choices()
              if isinstance(resolved.get(choice.group), dict)}
    shaped = {p.name: p.version for p in shaping(values)}
    if shaped:
        identity["plugins"] = shaped
    return identity
