"""Each arm at its own best rate, found by the learning-rate scan (``ablations.quality.lr_scan``) on the scan seeds:
the arm's own scan before its evaluation seeds, and the baseline's compute curve checked at its end budgets, tuned per
budget where the best moves with the budget (``budget_rates``). Every scan seed's final loss is an ``lr_scan_loss``
row and each choice an ``lr_tuned`` row, so the report draws loss against rate per arm with the best marked.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace

import torch

from ablations.config.schema import TrainConfig
from ablations.quality.arms import Arm, train_seed
from ablations.quality.data import Corpus
from ablations.quality.learning_rate import SCANNED, budget_rate, with_rate
from ablations.quality.ledger import Ledger
from ablations.quality.lr_scan import HALF_OCTAVE, Scan, scan
from ablations.results.rows import Rows

log = logging.getLogger("ablations")
# A scan seed's rows, renamed so that no verdict or curve reads them as an evaluation seed's.
SCAN_METRICS = {"val_loss": "lr_scan_loss", "train_wall_time": "lr_scan_wall_time"}


def budget_train(tc: TrainConfig, factor: float) -> TrainConfig:
    """``tc`` at ``factor`` x its steps, a full schedule, validated only at the start and the end (the curve needs the
    final loss alone). Cosine: warm-up and decay stretched with it. wsd: the same warm-up, so every budget shares
    one stable phase and one run trains them all as cool-down branches (``ablations.quality.branches``)."""
    steps = max(1, round(int(tc.steps) * float(factor)))
    if tc.schedule == "wsd":
        return replace(tc, steps=steps, eval_interval=steps)
    warmup = min(steps - 1, round(int(tc.warmup) * steps / int(tc.steps)))
    return replace(tc, steps=steps, warmup=warmup, eval_interval=steps, log_interval=min(int(tc.log_interval), steps))


def budget_rates(ref: Arm, protocol: TrainConfig, factors: list[float], corpus: Corpus, spans: torch.Tensor,
                 device: torch.device, ledger: Ledger, rows: Rows) -> dict[float, float]:
    """Each budget's rate. Scanning (``train.lr_scan``): the curve's two end budgets are scanned from a half-octave
    either side of the 1x best; where either end's best differs, every budget is scanned so. Else the tuned
    configuration's per-budget rate where it has one (``learning_rate.budget_rate``), the baseline's own rate."""
    if not protocol.lr_scan:
        return {f: budget_rate(protocol, str(ref.base["variant"]), f, ref.rate).lr for f in factors}
    own = float(ref.tc.lr)
    start = [own / HALF_OCTAVE, own, own * HALF_OCTAVE]
    ends = {f: scan_arm(ref, f, start, corpus, spans, device, ledger, rows).best for f in {min(factors), max(factors)}}
    if all(best == own for best in ends.values()):
        return dict.fromkeys(factors, own)
    return {f: ends[f] if f in ends else scan_arm(ref, f, start, corpus, spans, device, ledger, rows).best
            for f in factors}


def scan_arm(arm: Arm, factor: float, start: list[float] | None, corpus: Corpus, spans: torch.Tensor,
             device: torch.device, ledger: Ledger, rows: Rows) -> Scan:
    """``arm``'s best rate at ``factor`` x its steps on the scan seeds (``lr_scan.scan``); every seed's final loss is
    a ``lr_scan_loss`` row and the choice an ``lr_tuned`` row (``budget``: the factor)."""
    protocol = arm.tc if factor == 1 else budget_train(arm.tc, factor)
    labels = dict(mode="lr_scan", budget=factor, point=arm.base.get("point"))

    finals: dict[tuple[float, int], float] = {}  # each (rate, seed) trained and recorded once, however often asked

    def final(rate: float, seed: int) -> float:
        if (rate, seed) not in finals:
            loss = math.inf
            at_rate = with_rate(protocol, rate)
            for r in train_seed(arm, seed, arm.tc, corpus, spans, device, ledger, Rows(base={}), at_rate, extras=False):
                scanned = dict(lr_source=f"scan seed at lr {rate:g}", **labels)
                if r["metric"] == "val_loss" and r["mode"] == "final":
                    rows.rows.append(dict(r, metric=SCAN_METRICS["val_loss"], **scanned))
                    loss = float(r["value"]) if r.get("status", "ok") == "ok" else math.inf
                elif r["metric"] == "train_wall_time":
                    rows.rows.append(dict(r, metric=SCAN_METRICS["train_wall_time"], **scanned))
                elif r["metric"] == "error":
                    rows.rows.append(dict(r, **labels))
            finals[(rate, seed)] = loss
        return finals[(rate, seed)]

    def mean_loss(rate: float, seeds: list[int] | None = None) -> float:
        losses = [final(rate, int(seed)) for seed in (seeds if seeds is not None else protocol.lr_scan_seeds)]
        return sum(losses) / len(losses) if losses else math.inf

    every = [*protocol.lr_scan_seeds, *protocol.lr_scan_confirm_seeds]
    confirm = (lambda rate: mean_loss(rate, every)) if protocol.lr_scan_confirm_seeds else None
    found = scan(mean_loss, float(protocol.shared_lr), protocol.lr_scan_grid, int(protocol.lr_scan_extend), start,
                 confirm, int(protocol.lr_scan_leaders), int(protocol.lr_scan_margin))
    at = "" if factor == 1 else f" at {factor:g}x the steps"
    log.info("quality %s learning-rate scan%s: %s", arm.base["variant"], at, found.line())
    chosen = Rows(base=dict(arm.base, lr=found.best, seed=None, lr_source=f"{SCANNED}: {found.line()}"))
    chosen.add("lr_tuned", found.best, "lr", note=f"{found.line()} (train={arm.tc.name})", statistic="best",
               status="ok", error="on edge" if found.on_edge else None, **labels)
    rows.rows.extend(chosen.rows)
    return found
