"""One case's row: built from each side's tree, checked for a base that does not implement it, then timed paired
and judged (``ablations.regress.paired``)."""

from __future__ import annotations

import argparse
import statistics

import torch

from ablations.measure.intervals import RoundsRule
from ablations.regress import comparable, paired
from ablations.regress.architecture import arch, split_overrides
from ablations.regress.cases import Case
from ablations.regress.paired import decided, judge, time_case
from ablations.regress.subjects import Subject
from ablations.regress.trees import Tree


def build(tree: Tree, case: Case) -> tuple[Subject, object]:
    """The case built from ``tree``'s code and called once (so a side that cannot run it says so here), and the
    architecture the case's overrides give in that tree (what ``comparable.config_gap`` reads)."""
    with tree.active() as components:
        torch.manual_seed(0)  # both sides get the same weights and inputs
        subject = case.build(components)
        subject.call()
        return subject, arch(components, **case.overrides)


def measure(case: Case, base: Tree, head: Tree, args: argparse.Namespace,
            confidence: float) -> tuple[dict, dict[str, list[float]]]:
    """One case's row. A base that cannot run the case (an API it lacks) or does not implement what it asks for
    (``ablations.regress.comparable``) leaves it ``not compared``, with the reason, untimed; a head that cannot run
    it is a ``failure``, which fails the check like a regression."""
    row: dict = {"name": case.name, "component": case.component, "variant": case.variant, "mode": case.mode,
                 "shape": list(case.shape), "counted": case.counted}
    # The base's declaration is read before anything is built: a setting it does not declare is not timed.
    reason = comparable.declaration_gap(base.components, case.overrides)
    built = {}
    for tree in (base, head):
        if reason and tree is base:
            continue
        try:
            built[tree.label] = build(tree, case)
        except Exception as exc:  # recorded on the case; the other cases still run
            if tree is head:
                row.update(verdict="failure", error=f"the head cannot run it: {type(exc).__name__}: {exc}")
                return row, {}
            reason = f"the base cannot run it: {type(exc).__name__}: {exc}"
    if not reason:
        (b, b_arch), (h, h_arch) = built["base"], built["head"]
        groups = list(split_overrides(case.overrides)[0])
        reason = comparable.config_gap(b_arch, h_arch, groups) or comparable.design_gap(b.design, h.design)
    if reason:
        row.update(verdict="not compared", reason=reason)
        return row, {}
    subjects = {label: subject for label, (subject, _) in built.items()}
    rule = rounds_rule(args, confidence)
    threshold = args.threshold / 100

    def until(ratios: list[float]) -> bool:
        return len(ratios) in rule.looks and decided(rule.interval(ratios), threshold)

    timed = time_case(subjects["head"], subjects["base"], rounds=args.rounds, min_run_time=args.min_run_time,
                      warmup=args.warmup, until=until if args.min_rounds is not None else None)
    iv = rule.interval(timed.ratios)
    row.update(ratio=iv.median, lo=iv.lo, hi=iv.hi, coverage=iv.coverage, verdict=judge(iv, threshold),
               rounds=len(timed.ratios), stopped=("decided" if decided(iv, threshold) else "budget")
               if args.min_rounds is not None else "fixed",
               base_median_s=statistics.median(timed.b), head_median_s=statistics.median(timed.a),
               ratios=timed.ratios, cpu_share=timed.cpu_share)
    if row["verdict"] == paired.NOT_JUDGED:
        row["rounds_to_judge"] = paired.rounds_to_judge(iv, len(timed.ratios), threshold)
    return row, {"base": timed.b, "head": timed.a}


def rounds_rule(args: argparse.Namespace, confidence: float) -> RoundsRule:
    """The case's rounds: exactly ``--rounds``, or sequential from ``--min-rounds`` with the looks' intervals held
    at the case's Bonferroni level. The stopping test is ``decided`` (the verdict), not a width."""
    return RoundsRule(args.rounds if args.min_rounds is None else args.min_rounds, args.rounds, confidence=confidence)
