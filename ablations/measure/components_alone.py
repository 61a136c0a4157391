"""Each component a point's choice swaps, timed alone: its forward and backward at the timed shape, paired and
interleaved against the component it replaces, beside the bytes and FLOPs each moves (``Work``, as the roofline
prices them) and the fraction of the memory bandwidth it reached.

A block ratio is the design's effect only if the kernels do the design's work at the machine's pace: RMSNorm does
strictly less arithmetic than LayerNorm, yet on a CPU in torch 2.13 ``F.rms_norm`` runs unfused (six kernels and a
composite backward) while ``F.layer_norm`` is one fused kernel, so the block can measure slower. Where a component
that moves no more bytes and FLOPs than the one it replaces measures slower alone, it is timed again through
``torch.compile`` (a fused path), so the report can say which part of the block's ratio is the library's kernel and
which is the choice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from ablations.config.checks import Shape
from ablations.measure.ceilings import Ceilings
from ablations.measure.intervals import RoundsRule
from ablations.measure.paired_rows import add_paired
from ablations.measure.timing import PairedTiming
from ablations.quality.precision import missing_compiler
from ablations.results.rows import Rows, Summary
from ablations.roofline.work import Work
from blockbench import Step, choices
from components import ArchConfig, Block
from components.block import HOOK_MODULES
from components.choice import Choice


@dataclass(frozen=True)
class Component:
    """One swapped component: its choice, and the module the variant's block and the baseline's hold for it."""

    choice: Choice
    variant: nn.Module
    baseline: nn.Module


def swapped(arch: ArchConfig, baseline: ArchConfig) -> list[Choice]:
    """The choices whose value differs between ``arch`` and ``baseline`` and whose module runs alone
    (``HOOK_MODULES``)."""
    return [c for c in choices() if c.hook in HOOK_MODULES and getattr(arch, c.group) != getattr(baseline, c.group)]


def build(choice: Choice, arch: ArchConfig, baseline: ArchConfig, device: torch.device,
          dtype: torch.dtype) -> Component:
    """Both sides' module for ``choice``, taken from a block of each architecture (so each is built as the block
    builds it, at the block's width and settings)."""
    attr = HOOK_MODULES[choice.hook]
    sides = [getattr(Block(a).to(device=device, dtype=dtype), attr) for a in (arch, baseline)]
    return Component(choice, *sides)


def forward_backward(module: nn.Module, x: torch.Tensor, grad: torch.Tensor) -> Callable[[], None]:
    """One forward and backward of ``module`` on ``x`` (gradients of its weights and its input), as in training."""
    def fn() -> None:
        x.grad = None
        module.zero_grad(set_to_none=True)
        module(x).backward(grad)
    return fn


def component_work(module: nn.Module, arch: ArchConfig, shape: Shape, elem: int) -> Work:
    """A training step's work of one component (three forwards' worth, as ``roofline.work`` states a step)."""
    return Work(type(module).work(arch, Step(shape.batch, shape.seq, shape.seq)), shape.batch * shape.seq,
                elem).times(3)


# A paired timing of two callables under the point's precision rule and budget (``paired_rows.paired_with``).
Pair = Callable[[Callable[[], object], Callable[[], object]], PairedTiming]


def measure_components(rows: Rows, arch: ArchConfig, baseline: ArchConfig, shape: Shape, device: torch.device,
                       dtype: torch.dtype, pair: Pair, rule: RoundsRule, ceilings: Ceilings | None) -> None:
    """Rows (``component`` naming the group) for every swapped component at ``shape``: the paired timing as a point's
    (``component_latency_ratio`` and its ``component_ratio_interval``), both sides' bytes and FLOPs as ratios, the
    variant's fraction of the memory bandwidth, and, where the variant asks no more of the machine and still
    measures slower, the same pairing compiled (``component_compiled_*``) or the line saying why it could not be."""
    elem = torch.empty((), dtype=dtype).element_size()
    tokens = shape.batch * shape.seq
    for choice in swapped(arch, baseline):
        part = build(choice, arch, baseline, device, dtype)
        x = torch.randn(shape.batch, shape.seq, arch.model.d_model, device=device, dtype=dtype, requires_grad=True)
        grad = torch.randn_like(x)
        labelled = Rows(base={**rows.base, "component": choice.group})
        paired = pair(forward_backward(part.variant, x, grad), forward_backward(part.baseline, x, grad))
        add_paired(labelled, "component_", "train", shape, paired, tokens, rule)
        work = component_work(part.variant, arch, shape, elem)
        base = component_work(part.baseline, baseline, shape, elem)
        labelled.add("component_bytes_ratio", work.bytes / base.bytes, "x", mode="train", shape=shape,
                     statistic="work model", note=f"{work.bytes} B against {base.bytes} B in a training step")
        if base.flops:
            labelled.add("component_flops_ratio", work.flops / base.flops, "x", mode="train", shape=shape,
                         statistic="work model")
        if ceilings is not None and ceilings.bandwidth:
            labelled.add("component_bandwidth_utilisation", work.bytes / Summary.of(paired.a).median /
                         ceilings.bandwidth, "fraction of memory bandwidth", mode="train", shape=shape,
                         statistic="median")
        if work.bytes <= base.bytes and work.flops <= base.flops and Summary.of(paired.ratios).median > 1:
            _compiled_pair(labelled, part, x, grad, pair, rule, shape, device)
        rows.rows.extend(labelled.rows)


def _compiled_pair(rows: Rows, part: Component, x: torch.Tensor, grad: torch.Tensor, pair: Pair, rule: RoundsRule,
                   shape: Shape, device: torch.device) -> None:
    """The pairing again with both sides through ``torch.compile``: what the choice costs on a fused path."""
    missing = missing_compiler(device)
    error = ""
    if not missing:
        try:
            paired = pair(*(forward_backward(torch.compile(m), x, grad) for m in (part.variant, part.baseline)))
        except Exception as exc:  # a component that does not compile is a line in the report, not a failed point
            error = f"torch.compile failed: {type(exc).__name__}: {exc}"[:300]
        else:
            add_paired(rows, "component_compiled_", "train", shape, paired, shape.batch * shape.seq, rule)
            return
    rows.add("component_compiled_latency_ratio", None, "x", mode="train", shape=shape, status="skipped",
             error=missing or error)
