"""k against how far training went (``ablations.quality.progress``): a synthetic sweep whose multiplier follows the
baseline's loss and not its bytes per parameter reads so, and the known answers are left out."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ablations.quality.progress import cells, correlations


def _sweep(losses: list[float], bpp: list[float], k: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    worth = pd.DataFrame({"sweep": "horizon", "corpus": "c", "d_model": 64, "train_steps": [100 * (i + 1) for i in
                                                                                           range(len(k))],
                          "variant": "swiglu", "expected": np.nan, "k_flops": k, "k_flops_lo": np.nan,
                          "k_flops_hi": np.nan, "k_flops_text": "", "bytes_per_param": bpp})
    known = worth.iloc[:1].assign(variant="baseline at 2× (knot left out)", expected=2.0, k_flops=2.0)
    table = pd.DataFrame([{"sweep": "horizon", "corpus": "c", "d_model": 64, "train_steps": 100 * (i + 1),
                           "variant": "gpt2", "baseline": "gpt2", "metric": "val_loss", "mode": "final",
                           "status": "ok", "seed": seed, "value": loss + 0.01 * seed}
                          for i, loss in enumerate(losses) for seed in (0, 1)])
    return pd.concat([worth, known], ignore_index=True), table


def test_k_that_follows_the_loss_reads_a_strong_correlation_with_it_and_none_with_bytes():
    losses = [3.0, 2.5, 2.2, 2.6, 2.1]
    bpp = [1.0, 2.0, 4.0, 8.0, 16.0]
    k = [math.exp(-(x - 3.0)) for x in losses]  # log k exactly linear in the loss
    frame = cells(*_sweep(losses, bpp, k))
    assert set(frame["variant"]) == {"swiglu"} and len(frame) == 5  # the known answer is not a choice's cell
    assert frame["baseline_loss"].tolist() == pytest.approx([x + 0.005 for x in losses])  # mean over the seeds
    r = correlations(frame).iloc[0]
    assert r["r with baseline loss"] == pytest.approx(-1.0)
    assert abs(r["r with log bytes/param"]) < 0.9


def test_fewer_than_three_cells_give_no_correlation():
    frame = cells(*_sweep([3.0, 2.5], [1.0, 2.0], [1.0, 1.5]))
    assert math.isnan(correlations(frame).iloc[0]["r with baseline loss"])
