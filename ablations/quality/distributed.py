"""Data parallelism for the quality runs: ``torchrun --standalone --nproc_per_node=N -m ablations ...``.

Every rank runs the same sweep in the same order; each quality seed trains over the N ranks, each rank a contiguous
shard of the global batch (``train.batch`` / N rows), and the gradients are averaged across ranks before the
optimizer step (DDP's all-reduce, as one flattened collective per step), so the update is the single-process one at
the same global batch and every rank holds the same weights. Ranks start from the same weights (the seed fixes
them) and score the same validation windows; only rank 0 writes (point files, the seed ledger, the table, the
report, the tracker). The backend is NCCL on CUDA and gloo on CPU.

Outside torchrun (no ``WORLD_SIZE``, or 1) every function here is the single-process identity.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, TypeVar

import torch
import torch.distributed as dist

T = TypeVar("T")
# How long a rank waits for the others at a collective before it gives up: a rank that died is then a
# one-line failure rather than a hang.
TIMEOUT = datetime.timedelta(minutes=10)


class RankLost(RuntimeError):
    """A collective failed: another rank died or stopped answering. The point cannot finish on fewer ranks."""


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def is_writer() -> bool:
    """Whether this process writes results (rank 0, or the only process)."""
    return rank() == 0


def requested() -> int:
    """The world size torchrun asks for (``WORLD_SIZE``), 1 outside torchrun."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def start(device: str = "auto") -> None:
    """Join torchrun's process group (NCCL on CUDA, gloo on CPU) when it asks for more than one process; each CUDA
    rank takes the GPU its ``LOCAL_RANK`` names."""
    if requested() == 1 or dist.is_initialized():
        return
    cuda = device != "cpu" and torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo", timeout=TIMEOUT)


def shard(rows: torch.Tensor) -> torch.Tensor:
    """This rank's contiguous share of a global batch (``check_batch`` made it divide evenly)."""
    n = world_size()
    if n == 1:
        return rows
    per = len(rows) // n
    return rows[rank() * per:(rank() + 1) * per]


def average_gradients(model: torch.nn.Module) -> None:
    """Each gradient replaced by its mean over the ranks: one flattened all-reduce."""
    n = world_size()
    if n == 1:
        return
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    _collective(dist.all_reduce, flat)
    flat /= n
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def mean(value: float, device: torch.device) -> float:
    """``value`` averaged over the ranks (each rank's loss on its shard: the global batch's loss)."""
    if world_size() == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    _collective(dist.all_reduce, t)
    return float(t.item()) / world_size()


def from_writer(obj: T) -> T:
    """Rank 0's ``obj`` on every rank (a decision every rank must take alike: skip a point, a seed in the ledger)."""
    if world_size() == 1:
        return obj
    box: list[Any] = [obj]
    _collective(dist.broadcast_object_list, box, src=0)
    return box[0]


def _collective(op: Any, *args: Any, **kwargs: Any) -> None:
    try:
        op(*args, **kwargs)
    except RuntimeError as exc:  # gloo and NCCL raise RuntimeError subclasses (DistBackendError, ...)
        raise RankLost(f"rank {rank()} of {world_size()} lost the others at a collective: "
                       f"{' '.join(str(exc).split())[:200]}") from None
