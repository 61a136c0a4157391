"""How well two runs of the same sweep agree: the repeatability of its paired ratios.

    blockbench repeat RUN_A RUN_B [--metric GLOB ...] [--tolerance PCT] [--all]

RUN_A and RUN_B are ``results.csv`` files or run folders of the same sweep, run separately (two
processes, ideally at different times). Each ratio metric (``latency_ratio``, ``decode_latency_ratio``,
``prefill_latency_ratio`` by default) is matched on (sweep, variant, metric, mode, batch, seq_len) and
its relative difference |B - A| / A is printed, largest first. Unlike ``ablations.tools.compare``, which asks
"did it get worse?", this asks "would a user who reran it quote the same number?", so both directions
count. Exit status 0 when every matched ratio agrees within the tolerance (default 5%), 1 when one does
not, 2 when a table is missing or the runs share no ratio rows.
"""

from __future__ import annotations

import argparse
import fnmatch
from pathlib import Path

import pandas as pd

from ablations.config.errors import UsageError, command, prog
from ablations.tools.compare import KEY, InputError, load_table, medians

DEFAULT_METRICS = ("latency_ratio", "decode_latency_ratio", "prefill_latency_ratio")


def agreement(a: pd.DataFrame, b: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """One row per ratio present in both tables: value in A and B and the relative difference in %."""
    def pick(table: pd.DataFrame) -> pd.DataFrame:
        m = medians(table)
        keep = m["metric"].map(lambda name: any(fnmatch.fnmatchcase(name, g) for g in metrics))
        return m[keep][KEY + ["value"]]

    both = pick(a).merge(pick(b), on=KEY, suffixes=("_a", "_b"))
    both["diff_pct"] = 100 * (both["value_b"] - both["value_a"]).abs() / both["value_a"].abs()
    return both.sort_values("diff_pct", ascending=False, ignore_index=True)


@command("repeat")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("repeat"), description=__doc__.split("\n\n")[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--metric", action="append", metavar="GLOB",
                        help=f"ratio metric name or glob, repeatable (default: {', '.join(DEFAULT_METRICS)})")
    parser.add_argument("--tolerance", type=float, default=5.0, metavar="PCT",
                        help="largest relative difference that counts as agreeing (default 5)")
    parser.add_argument("--all", action="store_true", help="print every matched ratio, not only the worst 15")
    args = parser.parse_args(argv)
    try:
        table = agreement(load_table(args.run_a), load_table(args.run_b), args.metric or list(DEFAULT_METRICS))
    except InputError as exc:
        raise UsageError(str(exc)) from None
    if table.empty:
        raise UsageError("the two runs share no ratio rows (same sweep and shapes?)")
    shown = table if args.all else table.head(15)
    with pd.option_context("display.width", 200, "display.max_rows", None):
        print(shown.round({"value_a": 3, "value_b": 3, "diff_pct": 2}).to_string(index=False))
    outside = table[table["diff_pct"] > args.tolerance]
    per_metric = table.groupby("metric")["diff_pct"].agg(["size", "median", "max"]).round(2)
    print(per_metric.rename(columns={"size": "ratios", "median": "median_diff_pct", "max": "max_diff_pct"}))
    print(f"{len(table) - len(outside)} of {len(table)} ratios agree within {args.tolerance:g}%"
          + ("" if outside.empty else f"; {len(outside)} do not"))
    return 1 if len(outside) else 0


if __name__ == "__main__":
    raise SystemExit(main())
