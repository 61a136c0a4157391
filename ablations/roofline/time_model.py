"""Time for a ``Work`` on a ``Hardware``: the pure roofline, and the calibrated prediction with what bounds it.

Roofline (ceilings only): ``max(FLOPs / peak, bytes / bandwidth)``.

Prediction: the parts run one after another, each bound by its own ceiling times its kind's efficiency:

- matrix products: ``max(linear FLOPs / (peak x eff(N)), (weights + their activations) / (bandwidth x eff_mem))``
  where eff(N) is the calibrated efficiency of products with N rows (small-N products are compute-inefficient);
- attention: ``max(FLOPs / (peak x eff_att_flops), (KV + Q/output bytes) / (bandwidth x eff_att_mem))`` where
  the hardware overlaps the two (a GPU), their sum where it does not (``attention_overlapped: false``, a CPU,
  whose calibration fits both efficiencies to that sum);
- norms: bytes / (bandwidth x eff_mem);
- per-call overhead: kernels x call_overhead, added on a CPU, overlapped on a GPU (the larger of the two).

The bound named is the largest of the compute-bound time, the memory-bound time and the overhead.
"""

from __future__ import annotations

from dataclasses import dataclass

from ablations.roofline.calls import kernel_calls
from ablations.roofline.hardware import Hardware
from ablations.roofline.work import Work, mode_work
from components import ArchConfig


def roofline_time(work: Work, peak_flops: float, bandwidth: float) -> float:
    return max(work.flops / peak_flops, work.bytes / bandwidth)


def roofline_bound(work: Work, peak_flops: float, bandwidth: float) -> str:
    return "compute" if work.flops / peak_flops >= work.bytes / bandwidth else "memory"


@dataclass(frozen=True)
class Prediction:
    seconds: float
    compute_s: float
    memory_s: float
    overhead_s: float

    @property
    def bound(self) -> str:
        parts = {"compute": self.compute_s, "memory": self.memory_s, "per-call overhead": self.overhead_s}
        return max(parts, key=parts.get)


def predict(work: Work, hw: Hardware, calls: int) -> Prediction:
    compute = memory = 0.0
    linear = (work.linear_flops / (hw.peak_flops * hw.matmul_fraction(work.tokens)),
              (work.weight_bytes + work.linear_activation_bytes) / (hw.bandwidth * hw.memory_efficiency))
    attention = (work.attention_flops / (hw.peak_flops * hw.attention_compute_efficiency),
                 (work.kv_read_bytes + work.kv_write_bytes + work.attention_activation_bytes)
                 / (hw.bandwidth * hw.attention_memory_efficiency))
    overlapped = [linear, attention] if hw.attention_overlapped else [linear]
    for flops_s, bytes_s in overlapped:
        if flops_s >= bytes_s:
            compute += flops_s
        else:
            memory += bytes_s
    if not hw.attention_overlapped:
        compute += attention[0]
        memory += attention[1]
    memory += work.norm_bytes / (hw.bandwidth * hw.memory_efficiency)
    overhead = calls * hw.call_overhead
    kernels = compute + memory
    total = max(kernels, overhead) if hw.overlapped_calls else kernels + overhead
    return Prediction(total, compute, memory, overhead)


def predict_mode(arch: ArchConfig, mode: str, batch: int, seq: int, hw: Hardware, elem: int) -> Prediction:
    """One call of ``arch``'s language model (head included) in ``mode`` at ``batch`` x ``seq`` on ``hw``."""
    return predict(mode_work(arch, mode, batch, seq, elem, lm_head=True), hw, kernel_calls(arch, mode))
