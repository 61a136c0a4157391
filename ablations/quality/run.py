"""The quality runs of one sweep point: one training run per seed, as long-form rows.

Quality rows describe the quality model, not the measurement model: their size columns (d_model, n_layers,
n_heads, n_kv_heads, ffn_hidden, params, params_baseline) are the small model's, ``batch``/``seq_len`` the
training shape, ``vocab_size`` the data's vocabulary (256 for bytes), ``dtype`` the training's precision
(``train.precision`` as resolved: a bf16 measurement sweep does not change the losses), ``attention_core`` the
attention core's dtype under bf16, ``compile`` true only with ``train.compile`` (the top-level ``compile=true`` is
the measurement's), ``step_choice`` why the step runs so (``ablations.quality.precision``) and ``corpus`` the sha256
of the training data. Each seed's step efficiency: ``train_flops_per_s`` (the work model's training FLOPs per step
over the median step), ``train_peak_fraction`` (that over the machine's measured matrix-product rate at the step's
precision), ``train_data_share`` (reading batches) and, compiled, ``compile_time``.

Losses are in nats per byte, or per token on token files (the ``unit`` says which; bits-per-byte rows are the
bytes' alone). A failing seed becomes a ``failed`` row and the other seeds still run; a diverging seed is a
``diverged`` row, a result rather than a failure (its pair leaves the comparison, and a sequential point goes on to
its next seed; ``ablations.quality.arms`` trains one seed). A corpus that cannot be read is the environment's fault,
not the point's: ``CorpusError`` stops the run.

With ``train.target_mde`` the seeds are sequential (``seeds``): the point trains each next seed for itself and
for its baseline (``arm``: ``ledger``) until its comparison is answered or the budget is spent, and its final
``val_loss`` rows say how it stopped (``stopped``, ``looks``, ``target_mde``). Its file holds the baseline's rows
of every seed it used, so each point file is its comparison's whole evidence.

Each arm trains at its own rate (``lr``, ``lr_source``: ``ablations.quality.learning_rate``); with ``train.lr_scan``
each arm's rate is scanned first on the scan seeds (``ablations.quality.tuning``).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import torch

from ablations.config.plan import QualityPlan
from ablations.config.schema import TrainConfig
from ablations.quality.arms import Arm, failed, make_arm, params_of, train_seed
from ablations.quality.branches import at_length, lengths
from ablations.quality.data import Corpus, CorpusError, open_corpus
from ablations.quality.distributed import RankLost
from ablations.quality.inference import paired_test
from ablations.quality.learning_rate import SCANNED, ArmRate, with_rate
from ablations.quality.ledger import Ledger, arm_id
from ablations.quality.lr_scan import start_rates
from ablations.quality.seeds import BASELINE, STOPS, family_size, seed_rule
from ablations.quality.tuning import budget_rates, budget_train, scan_arm
from ablations.quality.validation import validation_spans
from ablations.results.rows import Rows

log = logging.getLogger("ablations")
# The learning-rate check's rates, as multiples of train.lr (train.lr_check).
LR_FACTORS = (0.5, 1.0, 2.0)
# A budget run's rows, renamed so that no verdict reads them as the point's own final loss; a check budget's
# (``train.check_budgets``) apart again, so that no curve is built from them.
BUDGET_METRICS = {"val_loss": "budget_loss", "train_wall_time": "budget_wall_time"}
CHECK_METRICS = {"val_loss": "check_loss", "train_wall_time": "budget_wall_time"}
# The learning-rate check's final losses, apart from the seed's own.
LR_CHECK_METRICS = {"val_loss": "lr_check_loss"}


def run_quality(plan: QualityPlan, rows: Rows, device: torch.device, folder: Path | None = None) -> str:
    """Train the point's quality model seed by seed (``seeds.seed_rule``); append the rows; ``ok`` or ``failed``.

    ``folder`` is the sweep's: its seed ledger lets points share the baseline's seeds (``ledger``)."""
    try:
        return _run_seeds(plan, rows, device, Ledger(folder))
    except (CorpusError, RankLost):  # every later point would meet it too: stop with one line, not N failed points
        raise
    except Exception as exc:  # whatever escaped the per-seed guard is this point's failure, not the sweep's
        return failed(Rows(base=rows.base), rows, f"{type(exc).__name__}: {exc}", f"quality {rows.base['variant']}")


def _run_seeds(plan: QualityPlan, rows: Rows, device: torch.device, ledger: Ledger) -> str:
    tc, pair = plan.train, plan.pair
    rule = seed_rule(tc)
    family = family_size(tc)
    corpus = open_corpus(plan.data)
    params_baseline = params_of(plan.baseline)
    step = (plan.step_choice, plan.peak_flops)
    own = make_arm(tc, rows.base, pair.arch, plan.arch, rows.base["variant"], corpus, params_baseline, *step)
    ref = make_arm(tc, rows.base, pair.baseline, plan.baseline, pair.baseline_name, corpus, params_baseline, *step)
    source = (f"; corpus: {corpus.source}, {len(corpus.train)} B train, {len(corpus.val)} B validation"
              if corpus.unit == "byte" else f"; corpus: {corpus.source}")
    own.note += source
    ref.note += source
    spans = validation_spans(corpus, tc)
    # The baseline itself pairs with nothing: its seeds are the first look's, and the points that compare with it
    # add the rest. Every other point trains its baseline's seeds too (found in the ledger when the sweep's baseline
    # point trained them), so a point run on its own is a comparison, with fixed seeds as with sequential ones.
    paired = ref.id != own.id
    if tc.lr_scan:  # each arm at its own best rate, chosen on the scan seeds before any evaluation seed
        for arm in (own, ref) if paired else (own,):
            best = scan_arm(arm, 1.0, start_rates(tc, arm.rate.lr), corpus, spans, device, ledger, rows)
            arm.rate = ArmRate(best.best, f"{SCANNED}: {best.line()}")
            arm.tc = with_rate(arm.tc, best.best)
            arm.id = arm_id(arm.q, arm.tc, corpus.sha256)
            arm.base.update(arm=arm.id, lr_source=arm.rate.source)
        if not paired:  # the baseline's own point: its curve is its own arm's, at the rate just chosen
            ref = own
    stopped, tried = None, 0
    for seed in rule.seeds:
        tried += 1
        train_seed(own, seed, own.tc, corpus, spans, device, ledger, rows)
        if paired:
            train_seed(ref, seed, ref.tc, corpus, spans, device, ledger, rows)
        if not rule.sequential:
            stopped = rule.stop(tried, None, family)
        elif not paired:
            stopped = BASELINE if tried >= rule.looks[0] else None
        else:
            stopped = rule.stop(tried, paired_test(own.finals, ref.finals), family)
        if stopped:
            break
    if rule.sequential:
        log.info("quality %s: %d seed(s), %s", own.base["variant"], tried, STOPS[stopped])
    for row in rows.rows:  # the point's own final losses say how its seeds ended
        if row.get("arm") == own.id and row["metric"] == "val_loss" and row["mode"] == "final":
            row.update(stopped=stopped, looks=len(rule.looks), target_mde=rule.target_mde)
    if tc.budgets:
        _budgets(ref, curve_seeds(tc, rule.seeds[:tried]), tc, corpus, spans, device, ledger, rows)
    if tc.lr_check:
        _lr_check(own, rule.seeds[0], own.tc, corpus, spans, device, ledger, rows)
    return "failed" if "failed" in (own.status, ref.status) else "ok"


def curve_seeds(tc: TrainConfig, used: tuple[int, ...] | list[int]) -> list[int]:
    """The seeds the baseline's budget curve is trained on: the first ``budget_seeds`` of those the point used."""
    n = tc.budget_seeds
    return list(used if n is None else used[: int(n)])


def _budgets(ref: Arm, seeds: list[int], protocol: TrainConfig, corpus: Corpus, spans: torch.Tensor,
             device: torch.device, ledger: Ledger, rows: Rows) -> None:
    """The baseline at each ``train.budgets`` multiple of the steps, per curve seed: the loss-versus-compute curve
    the compute multiplier is read from (``ablations.quality.multiplier``). Scored on the same validation bytes.
    Then at each ``train.check_budgets`` multiple: known answers between the curve's knots, read as a variant is.
    Each budget trains at the baseline's own rate, or at its own where the best rate moves with the budget
    (``tuning.budget_rates``)."""
    runs = [(float(b), BUDGET_METRICS) for b in protocol.budgets] + [(float(b), CHECK_METRICS)
                                                                    for b in protocol.check_budgets]
    rates = budget_rates(ref, protocol, [f for f, _ in runs if f != 1], corpus, spans, device, ledger, rows)
    # Under wsd the budgets at one rate are one run's cool-down branches: the first trains them all, with the budgets
    # of every other length the arm's own run trains (train.branch_steps: the sweep's other horizons).
    horizons = [at_length(ref.tc, n) for n in lengths(ref.tc)]
    budget_lengths = {f: {budget_train(h, f).steps for h in horizons} for f in rates}
    for seed in seeds:
        for factor, metrics in sorted(runs, key=lambda run: run[0]):
            if factor == 1:
                continue  # the seed itself
            tc = with_rate(budget_train(ref.tc, factor), rates[factor])
            if tc.schedule == "wsd":
                tc = replace(tc, branch_steps=sorted({n for f, ns in budget_lengths.items() if rates[f] == rates[factor]
                                                      for n in ns}))
            # A budget is a multiple of this point's steps, whichever point's run trained it (a branch of another
            # horizon's curve carries that point's steps in the ledger).
            labels = dict(mode="budget", budget=factor, point=ref.base.get("point"), train_steps=int(protocol.steps))
            for r in train_seed(ref, seed, protocol, corpus, spans, device, ledger, Rows(base={}), tc, extras=False):
                if r["metric"] in ("val_loss", "train_wall_time") and r.get("mode") in ("final", "quality"):
                    rows.rows.append(dict(r, metric=metrics[r["metric"]], **labels))
                elif r["metric"] == "error":
                    rows.rows.append(dict(r, **labels))


def _lr_check(arm: Arm, seed: int, protocol: TrainConfig, corpus: Corpus, spans: torch.Tensor, device: torch.device,
              ledger: Ledger, rows: Rows) -> None:
    """One seed at ``LR_FACTORS`` x the arm's own rate: whether that rate suits this arm (the report flags one
    whose best rate is another). The factor 1 run is the seed itself. Each check trains as the seed did: under wsd
    one run with the arm's other lengths as branches, so a sweep's other horizons read their check from the ledger."""
    for factor in LR_FACTORS:
        if factor == 1:
            continue
        tc = replace(protocol, lr=float(protocol.lr) * factor)
        for r in train_seed(arm, seed, protocol, corpus, spans, device, ledger, Rows(base={}), tc):
            if r["metric"] == "val_loss" and r["mode"] == "final":
                rows.rows.append(dict(r, metric=LR_CHECK_METRICS["val_loss"], mode="lr_check", point=arm.base["point"],
                                      train_steps=int(protocol.steps)))  # a branch's run carries its origin's steps
