"""Compare two results tables of the harness and fail when a metric got worse past its threshold.

    blockbench compare OLD NEW [--threshold METRIC=PCT ...] [--verbose]
    blockbench compare OLD/summary.json NEW/summary.json      # verdicts (ablations.tools.compare_summaries)

OLD and NEW are ``results.csv`` files or run folders (holding ``results.csv`` or ``points/*.csv``). Rows
are matched on (sweep, variant, baseline, metric, mode, batch, seq_len), plus step and position for quality rows
(``baseline``: the block a ratio or loss difference is against, GPT-2's where a table predates the column);
several rows under one key (seeds) are reduced to their median. Each metric has a direction (latency up
is worse, throughput down is worse) and a threshold in percent of the old value, in the metric's own
terms: ``latency`` 50 fails at 1.5x the old time, ``throughput`` 33 fails at two thirds of the old rate.

Exit status: 0 nothing regressed, 1 something regressed (each printed with metric, variant and by how
much), 2 a file is missing or unreadable, or the tables share no rows.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ablations.config.errors import UsageError, command, prog
from ablations.results.table import TableError, load

KEY = ["sweep", "variant", "baseline", "metric", "mode", "batch", "seq_len"]
# The block a table without a ``baseline`` column is paired with.
DEFAULT_BASELINE = "gpt2"
QUALITY_KEY = ["step", "position"]  # quality rows: one value per training step or position
REQUIRED = ["variant", "metric", "value"]
HIGHER_IS_WORSE, LOWER_IS_WORSE = 1, -1


@dataclass(frozen=True)
class Rule:
    direction: int  # HIGHER_IS_WORSE or LOWER_IS_WORSE
    threshold: float  # percent worse, in the metric's own direction, that counts as a regression


# The rules several metrics share, one per row of docs/results.md's threshold table.
RATE = Rule(LOWER_IS_WORSE, 40.0)  # throughput, FLOP rate, utilisation
COUNT = Rule(HIGHER_IS_WORSE, 1.0)  # FLOPs, parameters, bytes: the same code counts the same
LOSS = Rule(HIGHER_IS_WORSE, 2.0)
# First matching pattern wins. Each threshold sits above the largest change between reruns of the same code on a
# shared machine: paired ratios cancel machine drift and are tight; decode steps are short and memory-bound, so
# noisier; absolute times carry every load change between two runs. A 2x slowdown exceeds every timing threshold.
DEFAULT_RULES: list[tuple[str, Rule]] = [
    ("decode_latency_ratio", Rule(HIGHER_IS_WORSE, 30.0)),
    ("*latency_ratio", Rule(HIGHER_IS_WORSE, 15.0)),
    ("*latency", Rule(HIGHER_IS_WORSE, 60.0)),
    ("first_call_time", Rule(HIGHER_IS_WORSE, 100.0)),
    ("*throughput", RATE), ("flop_rate", RATE), ("utilisation", RATE),
    ("flops", COUNT), ("params", COUNT), ("*_bytes", COUNT),
    ("*loss*", LOSS), ("*perplexity*", LOSS), ("*ppl*", LOSS),
]
# Properties of the machine, not of the code: reported when they moved, never a regression.
MACHINE_METRICS = ("matmul_peak", "memory_bandwidth", "call_overhead")
MACHINE_NOTE_PCT = 20.0


class InputError(Exception):
    """A table that cannot be read or compared; the message is the one line printed."""


@dataclass(frozen=True)
class Change:
    key: dict[str, str]
    old: float
    new: float
    worse_pct: float  # > 0: worse by this much, in the metric's direction; < 0: better
    rule: Rule
    unit: str
    spread: str

    @property
    def regressed(self) -> bool:
        return self.worse_pct > self.rule.threshold

    def describe(self) -> str:
        k = self.key
        where = " ".join(f"{column}={k[column]}" for column in ("sweep", "variant", "mode") if k.get(column))
        where += f" (against {k['baseline']})" if k.get("baseline") else ""
        shape = f" {k['batch']}x{k['seq_len']}" if k.get("batch") and k.get("seq_len") else ""
        extra = "".join(f" {column}={k[column]}" for column in QUALITY_KEY if k.get(column))
        moved = (self.new / self.old - 1) * 100 if self.old else math.inf
        verb = "rose" if moved >= 0 else "fell"
        return (f"{k['metric']} {where}{shape}{extra}: {self.old:.4g} -> {self.new:.4g} {self.unit} "
                f"({verb} {abs(moved):.1f}%, threshold {self.rule.threshold:g}% worse){self.spread}")


def worse_pct(old: float, new: float, direction: int) -> float:
    """How much worse ``new`` is than ``old`` in percent of ``old``, in the metric's direction (negative: better)."""
    if old == 0:
        return 0.0 if new == old else (math.inf if (new - old) * direction > 0 else -math.inf)
    return (new / old - 1) * 100 * direction


def rule_for(metric: str, overrides: list[tuple[str, float]], rules: list[tuple[str, Rule]] = DEFAULT_RULES) -> (
        Rule | None):
    """The rule of ``metric``: a user threshold (exact name or glob) replaces the default's threshold."""
    default = next((rule for pattern, rule in rules if fnmatch.fnmatchcase(metric, pattern)), None)
    for pattern, threshold in reversed(overrides):  # the last flag given wins
        if fnmatch.fnmatchcase(metric, pattern):
            if default is None:
                raise InputError(f"--threshold {pattern}={threshold:g}: metric {metric!r} has no known direction")
            return Rule(default.direction, threshold)
    return default


def load_table(path: Path) -> pd.DataFrame:
    """A results table from a CSV file or a run folder (``table.load``); ``InputError`` in one line if that fails."""
    try:
        return _checked(load(path), path)
    except TableError as exc:
        raise InputError(str(exc)) from None


def _checked(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    missing = [column for column in REQUIRED if column not in table.columns]
    if missing:
        raise InputError(f"{path}: not a results table of the harness (missing column(s): {', '.join(missing)})")
    return table


def _key_text(value: object) -> str:
    # batch 4 is read as 4.0 when another row has no batch: both must print and match as "4".
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def medians(table: pd.DataFrame) -> pd.DataFrame:
    """One row per key: the median of ``value`` (and of ``lo``/``hi``) over successful rows."""
    cols = [column for column in KEY + QUALITY_KEY if column in table.columns]
    t = table.copy()
    if "status" in t.columns:
        t = t[t["status"].fillna("ok") == "ok"]
    t["value"] = pd.to_numeric(t["value"], errors="coerce")
    t = t[t["value"].notna()]
    for column in ("lo", "hi"):
        t[column] = pd.to_numeric(t[column], errors="coerce") if column in t.columns else math.nan
    if "unit" not in t.columns:
        t["unit"] = ""
    named = t["baseline"].astype(object) if "baseline" in t.columns else pd.Series(None, index=t.index, dtype=object)
    t["baseline"] = named.where(named.notna(), DEFAULT_BASELINE)
    for column in cols:
        t[column] = t[column].map(_key_text)
    grouped = t.groupby(cols, sort=True, dropna=False)
    out = grouped.agg(value=("value", "median"), lo=("lo", "median"), hi=("hi", "median"),
                      unit=("unit", "first"), rows=("value", "size"))
    return out.reset_index()


def failed_keys(table: pd.DataFrame) -> set[tuple[str, ...]]:
    """Keys of (sweep, variant) points whose rows say ``status=failed``."""
    if "status" not in table.columns:
        return set()
    bad = table[table["status"].fillna("ok") != "ok"]
    return {(_key_text(r.get("sweep")), _key_text(r.get("variant"))) for r in bad.to_dict("records")}


def compare(old: pd.DataFrame, new: pd.DataFrame, overrides: list[tuple[str, float]]) -> tuple[
        list[Change], dict[str, list[str]]]:
    """Changes of every metric with a rule, and notes: skipped metrics, one-sided rows, failures, machine."""
    a, b = medians(old), medians(new)
    cols = [column for column in KEY + QUALITY_KEY if column in a.columns and column in b.columns]
    if not cols or "metric" not in cols:
        raise InputError("the tables share no key columns")
    merged = a.merge(b, on=cols, how="outer", suffixes=("_old", "_new"), indicator=True)
    both = merged[merged["_merge"] == "both"]
    if both.empty:
        raise InputError(f"nothing to compare: no rows match on ({', '.join(cols)})")
    notes: dict[str, list[str]] = {"no rule": [], "only old": [], "only new": [], "failed": [], "machine": []}
    changes = []
    for row in both.to_dict("records"):
        key = {column: row[column] for column in cols}
        metric = key["metric"]
        if metric in MACHINE_METRICS:
            moved = worse_pct(row["value_old"], row["value_new"], LOWER_IS_WORSE)
            if abs(moved) > MACHINE_NOTE_PCT:
                notes["machine"].append(f"{metric} moved {-moved:+.0f}% ({row['value_old']:.4g} -> "
                                        f"{row['value_new']:.4g}): the machine, not the code; absolute times suspect")
            continue
        rule = rule_for(metric, overrides)
        if rule is None:
            notes["no rule"].append(metric)
            continue
        spread = ""
        if not (math.isnan(row["lo_new"]) or math.isnan(row["lo_old"])):
            spread = (f" [quartiles old {row['lo_old']:.4g}..{row['hi_old']:.4g}, "
                      f"new {row['lo_new']:.4g}..{row['hi_new']:.4g}]")
        changes.append(Change(key, row["value_old"], row["value_new"],
                              worse_pct(row["value_old"], row["value_new"], rule.direction), rule,
                              _key_text(row["unit_old"]), spread))
    for side, label in (("left_only", "only old"), ("right_only", "only new")):
        for row in merged[merged["_merge"] == side].to_dict("records"):
            notes[label].append(" ".join(f"{column}={row[column]}" for column in cols if row[column]))
    # A point that measured before and fails now is worse than any slowdown.
    for sweep, variant in sorted(failed_keys(new) - failed_keys(old)):
        notes["failed"].append(f"sweep={sweep} variant={variant}")
    notes["no rule"] = sorted(set(notes["no rule"]))
    return changes, notes


def parse_threshold(text: str) -> tuple[str, float]:
    metric, sep, pct = text.partition("=")
    try:
        value = float(pct.rstrip("%"))
    except ValueError:
        value = -1.0
    if not sep or not metric or not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be METRIC=PERCENT, e.g. latency_ratio=10 or '*latency=50'")
    return metric, value


@command("compare")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("compare"), description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="baseline results.csv or run folder")
    parser.add_argument("new", type=Path, help="results.csv or run folder to check")
    parser.add_argument("--threshold", "-t", type=parse_threshold, action="append", default=[], metavar="METRIC=PCT",
                        help="percent worse that fails METRIC (a name or glob; repeatable; overrides the default)")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every compared row, not only regressions")
    args = parser.parse_args(argv)
    if args.old.suffix == ".json" or args.new.suffix == ".json":  # two reports' summary.json: verdicts, not rows
        from ablations.tools.compare_summaries import compare_summaries, load_summary

        lines, changed = compare_summaries(load_summary(args.old), load_summary(args.new))
        print("\n".join(lines))
        return 1 if changed else 0
    try:
        changes, notes = compare(load_table(args.old), load_table(args.new), args.threshold)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    return report(changes, notes, args.verbose)


def report(changes: list[Change], notes: dict[str, list[str]], verbose: bool) -> int:
    regressed = [change for change in changes if change.regressed]
    regressed.sort(key=lambda change: change.worse_pct - change.rule.threshold, reverse=True)
    for change in regressed:
        print(f"REGRESSED {change.describe()}")
    if verbose:
        for change in changes:
            if not change.regressed:
                print(f"ok        {change.describe()}")
    for note in notes["failed"]:
        print(f"FAILED    point fails in NEW but not in OLD: {note}")
    for note in notes["machine"]:
        print(f"note: {note}")
    if notes["no rule"]:
        print(f"note: not compared (no direction known): {', '.join(notes['no rule'])}")
    for label in ("only old", "only new"):
        if notes[label]:
            side = label.replace("only ", "only in ").upper()
            print(f"note: {len(notes[label])} row(s) {side}, e.g. {notes[label][0]}")
    bad = len(regressed) + len(notes["failed"])
    verdict = f"FAIL: {bad} regression(s)" if bad else "OK: no metric regressed past its threshold"
    print(f"{verdict} ({len(changes)} rows compared)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
