"""A seed's training step against the machine, as rows: achieved FLOP/s at the median step (``train_flops_per_s``),
its fraction of the measured matrix-product peak (``train_peak_fraction``), the share of step time spent reading
batches (``train_data_share``) and, compiled, the compile time (``compile_time``)."""

from __future__ import annotations

import math
import statistics

from ablations.config.schema import TrainConfig
from ablations.quality.train import TrainResult
from ablations.results.rows import Rows


def efficiency_rows(rows: Rows, result: TrainResult, tc: TrainConfig, peak_flops: float) -> None:
    """The seed's training step against the machine: achieved FLOP/s at the median step, its fraction of the
    measured matrix-product peak, the share of step time spent reading batches and, compiled, the compile time."""
    if not result.step_seconds:
        return
    step = statistics.median(result.step_seconds)
    flops = float(rows.base.get("train_flops_step") or math.nan)
    rate = flops / step
    rows.add("train_step_time", step, "s", mode="quality", statistic="median",
             note="one optimizer step, batch reading included")
    rows.add("train_flops_per_s", rate, "FLOP/s", mode="quality", statistic="median",
             note="the work model's training FLOPs per step over the median step")
    if math.isfinite(peak_flops) and peak_flops > 0:
        rows.add("train_peak_fraction", rate / peak_flops, "ratio", mode="quality", statistic="median",
                 note=f"of {peak_flops / 1e9:.4g} GFLOP/s, this machine's square matrix product in {tc.precision}")
    rows.add("train_data_share", result.data_seconds / result.train_seconds, "ratio", mode="quality",
             note="the steps' time spent reading batches")
    if tc.compile and not result.compile_failed:
        rows.add("compile_time", max(0.0, result.step_seconds[0] - step), "s", mode="quality",
                 note="the first step less the median: torch.compile of the training forward and backward")
