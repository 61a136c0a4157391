"""Where a training step's time goes: the profiler's self time of every op, sorted into the parts a reader can act on.

``SPLIT`` names the parts once; ``split_of`` profiles a few calls of a step and returns each part's share of the
step's self time. An op belongs to ``optimizer`` when it runs under the optimizer's step or ``zero_grad`` (the
profiler's ``Optimizer.*`` range), else to ``attention`` when its name is an attention kernel's, else to
``matmul`` when it is a matrix product, else to ``other``: elementwise ops, norms, the loss, casts and the compiled
graphs' fused kernels. On CUDA the shares are of device time, on a CPU of CPU time.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

# Each part of the step: the key the rows and the report use (``step_share_<key>``), and what a reader sees.
SPLIT = {"matmul": "matrix products", "attention": "attention core", "optimizer": "optimizer",
         "other": "elementwise, norms, loss, casts"}
# The steps profiled: enough that one step's timer noise does not set a share, few enough to cost seconds.
SPLIT_CALLS = 5
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::_addmm_activation")
ATTENTION_MARKS = ("scaled_dot_product", "flash_attention", "efficient_attention")


def part_of(name: str, under_optimizer: bool) -> str:
    """The ``SPLIT`` key an op named ``name`` counts under."""
    if under_optimizer:
        return "optimizer"
    if any(mark in name for mark in ATTENTION_MARKS):
        return "attention"
    if name in MATMUL_OPS or "mkldnn_matmul" in name:
        return "matmul"
    return "other"


def _under_optimizer(event: object) -> bool:
    parent = event
    while parent is not None:
        if parent.name.startswith("Optimizer."):
            return True
        parent = getattr(parent, "cpu_parent", None)
    return False


def split_of(step: Callable[[], object], device: torch.device, calls: int = SPLIT_CALLS) -> dict[str, float]:
    """Each ``SPLIT`` part's share of ``calls`` calls of ``step`` (already warm), from the profiler's self time."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(calls):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    totals = dict.fromkeys(SPLIT, 0.0)
    for event in prof.events():
        if event.device_type != DeviceType.CPU:  # a CUDA kernel's time is its launching op's self device time
            continue
        self_time = (event.self_device_time_total if device.type == "cuda" else event.self_cpu_time_total)
        if self_time > 0:
            totals[part_of(event.name, _under_optimizer(event))] += self_time
    whole = sum(totals.values())
    return {k: v / whole if whole else float("nan") for k, v in totals.items()}
