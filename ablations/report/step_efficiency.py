"""The report's training-step section: how well each quality model's training step used the machine it ran on.

Per variant, from its seeds' rows (``ablations.quality.run``: the median over seeds of each seed's median step) and
its point's profiled quality step (``ablations.measure.quality_step``: ``step_share_<part>`` for each part of
``ablations.measure.step_split.SPLIT``): how the step ran, its time, the work model's training FLOPs over it, that
rate's fraction of the machine's measured matrix-product peak at the step's precision, the share spent reading
batches, the compile time and the profiler's split.
"""

from __future__ import annotations

import pandas as pd

from ablations.measure.step_split import SPLIT
from ablations.report.formatting import markdown_table

SEED_METRICS = ("train_step_time", "train_flops_per_s", "train_peak_fraction", "train_data_share")


def _over_seeds(frame: pd.DataFrame, metrics: tuple[str, ...], how: str = "median") -> pd.DataFrame:
    rows = frame[frame["metric"].isin(metrics)]
    return rows.assign(value=pd.to_numeric(rows["value"], errors="coerce")).pivot_table(
        index="variant", columns="metric", values="value", aggfunc=how)


def step_table(q: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame | None:
    """One row per trained variant; None when no seed recorded its step (tables written before these rows)."""
    seeds = _over_seeds(q, SEED_METRICS) if "metric" in q else pd.DataFrame()
    if seeds.empty:
        return None
    # A process compiles each block once; its later seeds reuse the code: the longest is what compiling cost.
    compiled = _over_seeds(q, ("compile_time",), "max")
    shares = _over_seeds(measured, tuple(f"step_share_{k}" for k in SPLIT)) if not measured.empty else pd.DataFrame()
    how = q.dropna(subset=["step_choice"]).groupby("variant")["step_choice"].first() if "step_choice" in q \
        else pd.Series(dtype=str)

    def cell(frame: pd.DataFrame, variant: str, metric: str, fmt: str) -> str:
        value = frame.at[variant, metric] if variant in frame.index and metric in frame.columns else float("nan")
        return "—" if pd.isna(value) else format(value, fmt)

    out = []
    for v in seeds.index:
        out.append({
            "variant": v,
            "step ran as": str(how.get(v, "—")).split(":")[0].removesuffix(" (as set)"),
            "step (ms)": cell(seeds * 1e3, v, "train_step_time", ".4g"),
            "achieved GFLOP/s": cell(seeds / 1e9, v, "train_flops_per_s", ".4g"),
            "of peak": cell(seeds, v, "train_peak_fraction", ".1%"),
            "reading batches": cell(seeds, v, "train_data_share", ".1%"),
            "compile (s)": cell(compiled, v, "compile_time", ".3g"),
            **{label: cell(shares, v, f"step_share_{k}", ".0%") for k, label in SPLIT.items()},
        })
    return pd.DataFrame(out)


def step_section(q: pd.DataFrame, measured: pd.DataFrame) -> list[str]:
    """The section's lines; none when no seed recorded its step."""
    table = step_table(q, measured)
    if table is None:
        return []
    reasons = sorted(q["step_choice"].dropna().unique()) if "step_choice" in q else []
    lines = ["#### The training step on this machine", "",
             "Medians over each variant's seeds: its training step, the work model's training FLOPs over it (achieved "
             "GFLOP/s), that rate's fraction of this machine's square matrix product measured at the step's precision "
             "(of peak), the steps' time spent reading batches, and the longest first step's excess over the median "
             "(compile: a process compiles each block once, its later seeds reuse the code). The split is the "
             "profiler's self time over 5 of the point's timed quality steps (`blockbench step` prints it for any "
             "point).", "", markdown_table(table), ""]
    if reasons:
        lines += ["Why the step ran so (`train.precision`, `train.attention_core`, `train.compile`; `auto` measured at "
                  "the run's start):", ""] + [f"- {r}" for r in reasons] + [""]
    return lines
