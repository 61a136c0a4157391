"""The quality model: the point's choices on the small model that ``train`` sizes.

``model`` is the measurement model (one d=1024 block by default); training that on a 2-core CPU would take
hours, so the quality run keeps the choices and swaps the sizes. Bias, tied embeddings and init are not
choices and come from ``model``, so a sweep that fixes them fixes them for both.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from ablations.config.schema import DataConfig, TrainConfig
from ablations.quality.branches import at_length, lengths
from ablations.quality.data import vocab_of
from ablations.quality.learning_rate import check_rates
from ablations.quality.lr_scan import check_scan
from ablations.quality.optimizer import SCHEDULES, decay_start
from ablations.quality.precision import check_step_settings
from ablations.quality.seeds import seed_rule
from components import POSITIONS, ArchConfig, ModelConfig
from components.config import ConfigError
from components.matched_params import match_params


def map_kv_heads(kv_heads: int, n_heads: int, quality_heads: int) -> int:
    """KV heads for the quality model: keep query heads per KV head where the head count allows.

    16 heads with 2 KV heads (8 per KV head) become 1 of 4; 16 with 8 (2 per) become 2 of 4. The result is
    the largest divisor of ``quality_heads`` not above ``quality_heads / group``, at least 1.
    """
    group = max(1, n_heads // kv_heads)
    target = max(1, quality_heads // group)
    return max(d for d in range(1, target + 1) if quality_heads % d == 0)


def quality_arch(tc: TrainConfig, vocab: int, arch: ArchConfig, matched: bool = False) -> ArchConfig:
    """The point's choices at the quality sizes.

    Positions bounded by a table (``bounded_length``: learned) get exactly ``train.context`` rows, the length they
    are trained at, so they carry no untrained rows into the comparison; the others (RoPE, NoPE) are built long
    enough for the longest extrapolation length. An explicit ``ffn.hidden_dim`` belongs to the measurement model's
    width and is not carried over: the quality model uses each FFN's own rule (and ``matched``, the run's
    ``match_params``, recomputes it). ``vocab``: the data's vocabulary (``ablations.quality.data.vocab_of``).
    """
    context, longest = int(tc.context), int(tc.context) * max(tc.extrapolation)
    model = ModelConfig(
        d_model=int(tc.d_model), n_layers=int(tc.n_layers), n_heads=int(tc.n_heads),
        max_seq_len=context if POSITIONS.traits(arch.pos.name).bounded_length else longest,
        vocab_size=vocab,
        tie_embeddings=arch.model.tie_embeddings, init_std=arch.model.init_std,
    )
    if arch.attn.name == "gqa" and arch.n_kv_heads < arch.model.n_heads:
        kv = tc.n_kv_heads if tc.n_kv_heads is not None else map_kv_heads(arch.n_kv_heads, arch.model.n_heads,
                                                                          model.n_heads)
        attn = replace(arch.attn, name="gqa", n_kv_heads=int(kv))
    else:  # MHA (or GQA with every head its own KV head), MQA and MLA carry over by name
        attn = replace(arch.attn, name="mha" if arch.attn.name == "gqa" else arch.attn.name, n_kv_heads=None)
    # Other attention settings (a window, MLA's sizes) carry over; MLA's unset sizes follow the quality model's heads.
    # Every other choice carries over as it is (``replace`` copies each group): a new choice needs no edit here.
    q = arch.replace(model=model, ffn=replace(arch.ffn, hidden_dim=None), attn=attn)
    return match_params(q) if matched else q


def check_train(tc: TrainConfig, device: torch.device) -> None:
    """The ``train`` rules for one point, one line each naming a ``train.`` key."""
    for key in ("steps", "batch", "context", "log_interval", "eval_interval", "eval_batches", "position_buckets",
                "d_model", "n_layers", "n_heads"):
        if not isinstance(getattr(tc, key), int) or getattr(tc, key) < 1:
            raise ConfigError(f"train.{key}={getattr(tc, key)!r} must be a positive integer")
    if not tc.seeds:
        raise ConfigError("train.seeds=[] needs at least one seed (or train.enabled=false)")
    if len(set(tc.seeds)) != len(tc.seeds):
        raise ConfigError(f"train.seeds={list(tc.seeds)} repeats a seed")
    for key in ("lr_min_ratio", "weight_decay", "clip", "warmup"):
        if getattr(tc, key) < 0:
            raise ConfigError(f"train.{key}={getattr(tc, key)} must be >= 0")
    check_rates(tc)
    check_scan(tc)
    final = tc.final_eval_batches
    if final is not None and (not isinstance(final, int) or final < 1):
        raise ConfigError(f"train.final_eval_batches={final!r} must be a positive integer, or null for eval_batches")
    average = tc.average_last or 0.0
    if not 0 <= average < 1:
        raise ConfigError(f"train.average_last={average} must be a fraction of the steps in [0, 1) (0: the last step)")
    seed_rule(tc)  # target_mde, min_seeds, max_seeds: one line each
    budgets = list(tc.budgets or [])
    if any(not isinstance(b, int | float) or not b > 0 or round(tc.steps * b) < 1 for b in budgets):
        raise ConfigError(f"train.budgets={budgets} must be positive multiples of train.steps={tc.steps} (e.g. "
                          "[0.5, 2, 4]), or [] for no compute multiplier")
    checks = list(tc.check_budgets or [])
    knots = {1.0, *(float(b) for b in budgets)}
    if checks and (not budgets or any(not isinstance(b, int | float) or float(b) in knots
                                      or not min(knots) < b < max(knots) for b in checks)):
        raise ConfigError(f"train.check_budgets={checks} must lie strictly between the curve's knots "
                          f"(1 and train.budgets={budgets}) and be none of them, or [] for no check")
    curve = tc.budget_seeds
    if curve is not None and (not isinstance(curve, int) or curve < 2):
        raise ConfigError(f"train.budget_seeds={curve!r} must be an integer of at least 2 (a multiplier's interval "
                          "needs two seeds), or null for every seed the point used")
    check_step_settings(tc, device)
    if tc.warmup >= tc.steps:
        raise ConfigError(f"train.warmup={tc.warmup} must be below train.steps={tc.steps}")
    check_schedule(tc)
    factors = list(tc.extrapolation)
    if not factors or any(f < 1 for f in factors) or any(max(factors) % f for f in factors):
        raise ConfigError(
            f"train.extrapolation={factors} needs positive factors that divide the largest (e.g. [1, 2, 4]), "
            "so every length scores the same bytes"
        )
    if tc.context % tc.position_buckets:
        raise ConfigError(f"train.position_buckets={tc.position_buckets} must divide train.context={tc.context}")
    if tc.d_model % tc.n_heads:
        raise ConfigError(f"train.d_model={tc.d_model} must be divisible by train.n_heads={tc.n_heads}")
    if tc.n_kv_heads is not None and (tc.n_kv_heads < 1 or tc.n_heads % tc.n_kv_heads):
        allowed = [d for d in range(1, tc.n_heads + 1) if tc.n_heads % d == 0]
        raise ConfigError(f"train.n_kv_heads={tc.n_kv_heads} must divide train.n_heads={tc.n_heads}; "
                          f"allowed: {allowed} or null")


def quality_pair(tc: TrainConfig, data: DataConfig, arch: ArchConfig, baseline: ArchConfig,
                 matched: bool = False) -> tuple[ArchConfig, ArchConfig]:
    """The point's block and its baseline at the quality sizes, checked; an error names the ``train.`` keys."""
    vocab = vocab_of(data)
    try:
        return (quality_arch(tc, vocab, arch, matched).validate(),
                quality_arch(tc, vocab, baseline, matched).validate())
    except ConfigError as exc:  # the keys it names are the quality model's, i.e. train.*
        raise ConfigError(f"the quality model (train.d_model/n_heads/n_layers): {exc}") from None


def check_schedule(tc: TrainConfig) -> None:
    """The schedule's settings (``train.schedule``, ``train.cooldown``, ``train.branch_steps``), one line each."""
    if tc.schedule not in SCHEDULES:
        raise ConfigError(f"train.schedule={tc.schedule!r} must be one of {', '.join(SCHEDULES)}")
    if tc.schedule != "wsd":
        return
    if not 0 < float(tc.cooldown) <= 1:
        raise ConfigError(f"train.cooldown={tc.cooldown} must be a share of the steps in (0, 1]")
    if any(not isinstance(steps, int) or steps < 1 for steps in tc.branch_steps):
        raise ConfigError(f"train.branch_steps={list(tc.branch_steps)} must hold positive step counts")
    budgets = [max(1, round(tc.steps * float(f))) for f in [*(tc.budgets or []), *(tc.check_budgets or [])]]
    for steps in sorted({*lengths(tc), *budgets}):
        start = decay_start(at_length(tc, steps))
        if start <= tc.warmup or start >= steps:
            raise ConfigError(f"train.warmup={tc.warmup} and train.cooldown={tc.cooldown} leave a run of {steps} "
                              "steps (a branch or a budget) no stable phase or no cool-down: every length needs both "
                              "(a shorter warm-up, or drop the length)")

