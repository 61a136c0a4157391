"""FLOPs: counted by ``torch.utils.flop_counter`` and derived analytically, so each checks the other.

On CPU the flash-attention kernel of SDPA is invisible to ``FlopCounterMode`` in torch 2.13 (one case:
4.83 counted vs 5.64 GFLOP analytic). Counting therefore runs under the math SDPA backend, whose matmuls
the counter sees; the FLOPs of attention do not depend on the kernel that computes it.

Convention (as FlopCounterMode): a multiply-add is 2 FLOPs; only matrix products count; causal attention
counts the full T x S score matrix, as fused kernels compute and as Kaplan et al. count it. The counter sees what
runs: for a sliding window, the dense masked kernel's every held key, the work model's ``executed_flops``; the
design's ``flops`` count min(keys, W) keys a query.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from blockbench import Step, Work
from components import ArchConfig, Decoder


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs that ``fn`` executes, with attention counted on every device."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def analytic_forward_work(arch: ArchConfig, batch: int, seq: int, context: int | None = None) -> Work:
    """The work of one Decoder forward on ``seq`` new tokens attending to ``context`` keys, as the components state
    it (``Decoder.work``): ``flops`` the design's, ``executed_flops`` what the kernels compute (``FlopCounterMode``
    counts those). ``context`` defaults to ``seq`` (a full forward); a decode step has seq=1 and context = cache
    length."""
    return Decoder.work(arch, Step(batch, seq, seq if context is None else context))


def analytic_forward_flops(arch: ArchConfig, batch: int, seq: int, context: int | None = None) -> int:
    """The design's matmul FLOPs of one Decoder forward (``analytic_forward_work``)."""
    return analytic_forward_work(arch, batch, seq, context).flops


def analytic_train_flops(arch: ArchConfig, batch: int, seq: int) -> int:
    """Forward plus backward: backward of every matmul is two matmuls of the same size."""
    return 3 * analytic_forward_flops(arch, batch, seq)


def per_token_forward_flops(arch: ArchConfig, context: int) -> int:
    """FLOPs to produce one token at a given context, decoder stack only (for the sizes table)."""
    return analytic_forward_flops(arch, 1, 1, context)
