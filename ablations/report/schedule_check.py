"""Does a stand-in schedule give the full schedule's answer? Each comparison read under both, paired by seed.

A warmup-stable-decay run with cool-down branches (``train.schedule=wsd``) stands in for a full cosine run at each
length (Hägele et al. 2024). This module reads two sets of folders trained at the same arms, rates and seeds, the
stand-in's and the full schedule's, and for every (sweep, length, arm) both hold gives:

- Δ against the baseline under each schedule, with its 95% t interval over the seeds (unadjusted: the same test for
  both schedules, where a report's own verdict applies Holm across its comparisons);
- the gap, stand-in Δ minus full Δ, paired by seed, with its 95% t interval;
- the seed spread: the standard deviation over seeds of Δ under the full schedule, pooled over every comparison at
  that length (three seeds give one comparison two degrees of freedom, too few to judge it by its own). The stand-in
  *matches within the seed spread* where the gap's mean is no larger than it: a schedule difference smaller than
  what a new seed moves a Δ by;
- each report's verdict (``ablations.quality.stats.summarize``: Holm across the comparisons each table holds at that
  length), so a changed verdict is read, not inferred;
- k in FLOPs under each, where both trained the baseline's compute curve at that length.

``python -m ablations.report.schedule_check STAND_IN [...] --full FULL [...] [--out FILE]`` prints (or writes) the
table and a summary line; the folders are named relative to where it runs, so run it from the repository root.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ablations.quality.horizon import bytes_per_param
from ablations.quality.inference import mean_ci, paired_test
from ablations.quality.worth import worth
from ablations.report.flips import flip_labels
from ablations.report.formatting import markdown_table, signed
from ablations.report.tables import ReportError, combine, load_table
from ablations.results.table import baseline_variant, without_repeated_seeds

LEVEL = 0.95
# (sweep, train_steps, variant) -> {seed: final loss}
Finals = dict[tuple[str, int, str], dict[int, float]]


@dataclass(frozen=True)
class Gap:
    """One comparison under both schedules."""

    sweep: str
    steps: int
    variant: str
    baseline: str
    full: tuple[float, float, float]
    stand_in: tuple[float, float, float]
    gap: tuple[float, float, float]
    own_sd: float
    n: int
    seed_sd: float = math.nan

    @property
    def within_spread(self) -> bool:
        return abs(self.gap[0]) <= self.seed_sd

    @property
    def detected(self) -> bool:
        """The gap's interval excludes 0."""
        return not self.gap[1] <= 0 <= self.gap[2]

    @property
    def same_direction(self) -> bool:
        return np.sign(self.full[0]) == np.sign(self.stand_in[0])


def finals(table: pd.DataFrame) -> Finals:
    """Every finished seed's final validation loss, by sweep, length and arm."""
    f = table[(table["metric"] == "val_loss") & (table["mode"] == "final")]
    values = pd.to_numeric(f["value"], errors="coerce")
    f = f[(f["status"].fillna("ok") == "ok") & np.isfinite(values)].assign(value=values)
    out: Finals = {}
    for (sweep, steps, variant), g in f.groupby(["sweep", "train_steps", "variant"]):
        out[(str(sweep), int(steps), str(variant))] = dict(zip(g["seed"].astype(int), g["value"].astype(float),
                                                               strict=True))
    return out


def _delta(variant: dict[int, float], base: dict[int, float], seeds: list[int]) -> dict[int, float]:
    return {s: variant[s] - base[s] for s in seeds}


def _mean_interval(by_seed: dict[int, float]) -> tuple[float, float, float]:
    ci = mean_ci(list(by_seed.values()), LEVEL)
    return ci.mean, ci.lo, ci.hi


def gaps(stand_in: pd.DataFrame, full: pd.DataFrame) -> list[Gap]:
    """Every comparison both tables trained on at least two shared seeds, the stand-in's order."""
    a, b = finals(stand_in), finals(full)
    out: list[Gap] = []
    for (sweep, steps, variant), runs in a.items():
        base = baseline_variant(sweep, stand_in[stand_in["sweep"] == sweep])
        if variant == base or (sweep, steps, variant) not in b or (sweep, steps, base) not in b:
            continue
        seeds = sorted(runs.keys() & b[(sweep, steps, variant)].keys() & a.get((sweep, steps, base), {}).keys()
                       & b[(sweep, steps, base)].keys())
        if len(seeds) < 2:
            continue
        d_in = _delta(runs, a[(sweep, steps, base)], seeds)
        d_full = _delta(b[(sweep, steps, variant)], b[(sweep, steps, base)], seeds)
        gap = paired_test(d_in, d_full)
        own = float(np.std(list(d_full.values()), ddof=1))
        out.append(Gap(sweep, steps, variant, base, _mean_interval(d_full), _mean_interval(d_in),
                       (gap.mean, *gap.interval(1 - LEVEL)), own, len(seeds)))
    return [replace(g, seed_sd=_pooled(out, g.sweep, g.steps)) for g in out]


def _pooled(checked: list[Gap], sweep: str, steps: int) -> float:
    """The seed sd of Δ under the full schedule, pooled over the comparisons at one length (variances weighted by
    their degrees of freedom)."""
    same = [g for g in checked if (g.sweep, g.steps) == (sweep, steps)]
    dof = sum(g.n - 1 for g in same)
    return math.sqrt(sum((g.n - 1) * g.own_sd ** 2 for g in same) / dof) if dof else math.nan


def _ci(v: tuple[float, float, float]) -> str:
    return f"{signed(v[0])} [{signed(v[1])}, {signed(v[2])}]"


def _verdicts(table: pd.DataFrame) -> dict[tuple[str, int, str], str]:
    from ablations.quality.stats import summarize
    s = summarize(table)
    s = s[(s["metric"] == "val_loss") & s["verdict"].notna()]
    return {(str(r["sweep"]), int(r["train_steps"]), str(r["variant"])): str(r["verdict"]) for _, r in s.iterrows()}


def _k(table: pd.DataFrame) -> dict[tuple[str, int, str], str]:
    w = worth(table)
    return {(str(r["sweep"]), int(r["train_steps"]), str(r["variant"])): str(r["k_flops_text"])
            for _, r in w.iterrows()}


def schedule_name(table: pd.DataFrame) -> str:
    """The schedule the rows trained under (``train.schedule``; rows without the column are cosine's)."""
    found = sorted(set(table["schedule"].dropna().astype(str))) if "schedule" in table else []
    return " and ".join(found) or "cosine"


def gap_frame(stand_in: pd.DataFrame, full: pd.DataFrame) -> pd.DataFrame:
    """The table: one row per comparison, Δ under each schedule, the paired gap, the seed spread and k under each."""
    found = gaps(stand_in, full)
    name, full_name = schedule_name(stand_in), schedule_name(full)
    labels = flip_labels(pd.concat([stand_in, full]))
    k_in, k_full = _k(stand_in), _k(full)
    v_in, v_full = _verdicts(stand_in), _verdicts(full)
    bpp = {sweep: bytes_per_param(stand_in[stand_in["sweep"] == sweep]) for sweep in {g.sweep for g in found}}
    rows = []
    for g in found:
        key = (g.sweep, g.steps, g.variant)
        per_param = bpp[g.sweep].get(g.steps, math.nan)
        rows.append({
            "choice": labels.get(g.variant, g.variant),
            "bytes/param": f"{per_param:.0f}" if math.isfinite(per_param) else f"{g.steps} steps",
            f"Δ {full_name}": _ci(g.full),
            f"Δ {name}": _ci(g.stand_in),
            f"{name} − {full_name} (paired)": _ci(g.gap),
            "seed sd of Δ": f"{g.seed_sd:.3f}",
            "within the seed spread": "yes" if g.within_spread else "**no**",
            f"verdict {full_name}": v_full.get(key, "—"),
            f"verdict {name}": v_in.get(key, "—"),
            f"k {full_name}": k_full.get(key, "—"),
            f"k {name}": k_in.get(key, "—"),
        })
    return pd.DataFrame(rows)


def summary_line(checked: list[Gap], name: str, full_name: str, frame: pd.DataFrame | None = None) -> str:
    """How many comparisons match within the seed spread, keep their direction and verdict (from ``frame``, the
    table ``gap_frame`` built), and show a detectable gap."""
    if not checked:
        return "No comparison was trained under both schedules on two or more shared seeds."
    within = sum(g.within_spread for g in checked)
    same = sum(g.same_direction for g in checked)
    detected = [g for g in checked if g.detected]
    mean_gap = float(np.mean([g.gap[0] for g in checked]))
    verdicts = ""
    if frame is not None and len(frame):
        agree = int((frame[f"verdict {full_name}"] == frame[f"verdict {name}"]).sum())
        verdicts = f"{agree} of {len(frame)} keep their verdict; "
    n = len(checked)
    return (f"{within} of {n} comparisons match within the seed spread; {same} of {n} keep Δ's sign; "
            f"{verdicts}"
            f"the gap's 95% interval excludes 0 in {len(detected)}; mean gap {signed(mean_gap)} nats/byte "
            f"({name} Δ minus {full_name} Δ; positive: {name} reads a smaller gain or a larger harm).")


def page(stand_in: pd.DataFrame, full: pd.DataFrame, folders: list[Path]) -> str:
    """The markdown the command prints or writes: what it compares, the table and the summary line."""
    name, full_name = schedule_name(stand_in), schedule_name(full)
    frame = gap_frame(stand_in, full)
    shown = " ".join(str(f) for f in folders)
    return "\n".join([
        f"# {name} against {full_name}: each comparison under both schedules, paired by seed", "",
        f"Built by `python -m ablations.report.schedule_check` from {shown}. Δ: 95% t interval over the seeds "
        "(unadjusted, the same test under both); verdicts: each table's own, Holm across its comparisons at that "
        f"length; seed sd of Δ: {full_name}'s, pooled over the comparisons at that length.", "",
        markdown_table(frame) if len(frame) else "(nothing to compare)", "",
        summary_line(gaps(stand_in, full), name, full_name, frame), ""])


def load_folders(folders: list[Path]) -> pd.DataFrame:
    """The folders' rows in one table, a seed two of them hold (read from one ledger) once."""
    return without_repeated_seeds(combine([load_table(f) for f in folders]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablations.report.schedule_check",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("stand_in", type=Path, nargs="+", metavar="STAND_IN",
                        help="folders with results.csv trained under the stand-in schedule (wsd)")
    parser.add_argument("--full", type=Path, nargs="+", required=True, metavar="FULL",
                        help="folders with results.csv trained under the full schedule (cosine)")
    parser.add_argument("--out", type=Path, help="write the page here instead of printing it")
    args = parser.parse_args(argv)
    try:
        stand_in, full = load_folders(args.stand_in), load_folders(args.full)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = page(stand_in, full, [*args.stand_in, *args.full])
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
