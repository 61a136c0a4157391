"""The windows a split is read in: the training loop's, drawn from the seed alone, and the evaluation's, fixed; and
how a batch of them reaches the device.

Every variant of a seed trains on the same bytes in the same order and every variant and seed is scored on the same
validation bytes, so a loss difference is the block's, not the data's.
"""

from __future__ import annotations

import numpy as np
import torch

from ablations.quality.data import Split


def train_starts(n_bytes: int, context: int, steps: int, batch: int, seed: int) -> torch.Tensor:
    """Start offsets of every training window, (steps, batch). Depends only on the seed and the sizes, so
    every variant of a seed sees the same bytes in the same order."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, n_bytes - context, (steps, batch), generator=gen)


def windows(data: Split, starts: torch.Tensor, length: int) -> torch.Tensor:
    """Rows of ``length`` consecutive ids at each start, as int64. A memory map is indexed with numpy, which reads
    only the pages the windows touch."""
    index = starts[..., None] + torch.arange(length)
    if isinstance(data, torch.Tensor):
        return data[index].long()
    return torch.from_numpy(np.asarray(data[index.numpy()], dtype=np.int64))


def eval_spans(val: Split, n_spans: int, span_len: int) -> torch.Tensor:
    """``n_spans`` fixed spans of ``span_len`` bytes spread evenly over the validation split (no randomness:
    every variant and seed is scored on the same bytes)."""
    last = len(val) - span_len
    starts = torch.linspace(0, last, n_spans).round().long() if n_spans > 1 else torch.zeros(1, dtype=torch.long)
    return windows(val, starts, span_len)


def chunk_spans(spans: torch.Tensor, length: int) -> torch.Tensor:
    """Cut spans of ``k * length + 1`` bytes into k windows of ``length + 1`` (input plus next byte), so every
    evaluation length predicts exactly the same target bytes and only the context differs."""
    k = (spans.shape[1] - 1) // length
    idx = torch.arange(k)[:, None] * length + torch.arange(length + 1)
    return spans[:, idx].reshape(-1, length + 1)


def to_device(rows: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``rows`` on ``device``; to a GPU from pinned memory without blocking, so the copy overlaps the work queued
    before it (the next use is on the same stream, which orders it)."""
    if device.type == "cuda":
        return rows.pin_memory().to(device, non_blocking=True)
    return rows.to(device)
