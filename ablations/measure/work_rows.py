"""The roofline rows of one timed mode and shape: FLOPs, bytes moved, intensity, roofline time and ratio,
utilisation.

The work model is ``ablations.roofline.work``'s (its docstring states it); the ceilings are the ones this run
measured (``ablations.measure.ceilings``). Ratios are variant / baseline at the same shape, as ``latency_ratio``.

FLOPs come as the design's (``flops``) and, where the kernels compute more, the executed (``executed_flops``): a
sliding window's design attends to min(keys, W) keys a query, while the dense masked kernel that runs it scores
every key the step holds. The roofline prices the design's; the FLOP rate and utilisation are the executed work
over the time, what the machine did.
"""

from __future__ import annotations

from collections import Counter

from ablations.config.checks import Shape
from ablations.measure.ceilings import Ceilings
from ablations.results.rows import Rows, Summary
from ablations.roofline.calls import kernel_calls
from ablations.roofline.time_model import roofline_bound, roofline_time
from ablations.roofline.work import mode_work
from components import ArchConfig

BYTES_NOTE = ("weights read once per call (learned table: the rows used); KV read over every key attended, "
              "written for new tokens; activations: linear and norm inputs and outputs, Q in and output out of "
              "attention; train = 3x forward")


EXECUTED_NOTE = "what the kernels compute: a dense masked kernel scores every key it holds (flops: the design's keys)"


def add_flop_rows(rows: Rows, mode: str, shape: Shape, design: int, executed: int, statistic: str,
                  latency: Summary | None, peak: float | None) -> None:
    """``flops`` (the design's), ``executed_flops`` beside it where the kernels compute more, and with a latency
    the executed FLOP rate and, with a peak, its utilisation. ``statistic`` says how ``executed`` was obtained
    (``exact``: counted by ``torch.utils.flop_counter``; ``analytic``: the work model)."""
    differs = executed != design
    rows.add("flops", design, "FLOP", mode=mode, shape=shape, statistic="analytic" if differs else statistic)
    if differs:
        rows.add("executed_flops", executed, "FLOP", mode=mode, shape=shape, statistic=statistic, note=EXECUTED_NOTE)
    if latency is None:
        return
    rate = executed / latency.median
    rows.add("flop_rate", rate, "FLOP/s", mode=mode, shape=shape, statistic="median")
    if peak:
        rows.add("utilisation", rate / peak, "fraction of matmul peak", mode=mode, shape=shape, statistic="median")


def add_work_rows(rows: Rows, mode: str, shape: Shape, arch: ArchConfig, baseline: ArchConfig, elem: int,
                  latency: Summary | None, ceilings: Ceilings | None) -> None:
    work, base = mode_work(arch, mode, shape.batch, shape.seq, elem), mode_work(baseline, mode, shape.batch,
                                                                                 shape.seq, elem)
    rows.add("bytes_moved", work.bytes, "B", mode=mode, shape=shape, statistic="analytic", note=BYTES_NOTE)
    for metric, value in (("weight_bytes_read", work.weight_bytes), ("kv_bytes_read", work.kv_read_bytes),
                          ("kv_bytes_written", work.kv_write_bytes), ("activation_traffic", work.activation_bytes)):
        rows.add(metric, value, "B", mode=mode, shape=shape, statistic="analytic")
    rows.add("arithmetic_intensity", work.intensity, "FLOP/B", mode=mode, shape=shape, statistic="analytic")
    rows.add("kernel_calls", kernel_calls(arch, mode), "count", mode=mode, shape=shape, statistic="counted")
    if mode in ("decode", "prefill"):  # forward's and train's are counted as they run (``measure_point``)
        add_flop_rows(rows, mode, shape, work.flops, work.executed_flops, "analytic", latency,
                      ceilings.matmul_peak if ceilings else None)
    if ceilings is None:
        return
    peak, bw = ceilings.matmul_peak, ceilings.bandwidth
    roof = roofline_time(work, peak, bw)
    rows.add("roofline_time", roof, "s", mode=mode, shape=shape, statistic="analytic",
             note=f"{roofline_bound(work, peak, bw)}-bound at this run's ceilings")
    rows.add("roofline_ratio", roof / roofline_time(base, peak, bw), "x", mode=mode, shape=shape,
             statistic="analytic", note=f"baseline {roofline_bound(base, peak, bw)}-bound")
    if latency is not None:
        rows.add("bandwidth_utilisation", work.bytes / latency.median / bw, "fraction of memory bandwidth", mode=mode,
                 shape=shape, statistic="median")


def add_backend_rows(rows: Rows, mode: str, backends: Counter[str]) -> None:
    for name, calls in sorted(backends.items()):
        rows.add("sdpa_backend_calls", calls, "count", mode=mode, statistic="counted", note=name)


def add_ceiling_rows(rows: Rows, ceilings: Ceilings, matmul_n: int, buffer_bytes: int) -> None:
    n = matmul_n
    peaks = ceilings.matmul_peaks or (ceilings.matmul_peak,)
    rows.add("matmul_peak", ceilings.matmul_peak, "FLOP/s", statistic="max", mode=f"{n}x{n}@{n}x{n}",
             min=min(peaks), max=max(peaks), n=len(peaks), note=f"the run's, best of {len(peaks)} measurements")
    for kind, value in (("copy", ceilings.copy_bandwidth), ("read", ceilings.read_bandwidth)):
        rows.add("memory_bandwidth", value, "B/s", statistic="max", mode=kind,
                 note=f"{buffer_bytes >> 20} MiB buffer" + (", read + write counted" if kind == "copy" else ""))
    rows.add("call_overhead", ceilings.call_overhead, "s", statistic="min", mode="add 1 element")
