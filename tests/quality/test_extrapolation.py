"""Length extrapolation: rows at L, 2L, 4L; "cannot" (no number) for learned positions past their table."""

from __future__ import annotations

import math

import torch

from ablations.quality.windows import chunk_spans
from tests.quality.helpers import quality_rows


def _extrap(rows: list[dict]) -> dict[int, dict]:
    return {r["seq_len"]: r for r in rows if r["metric"] == "extrap_loss"}


def test_learned_positions_cannot_go_past_their_table():
    status, rows = quality_rows("train.steps=6")
    ex = _extrap(rows)
    assert status == "ok" and sorted(ex) == [32, 64, 128]
    assert math.isfinite(ex[32]["value"]) and ex[32]["statistic"] == "mean"
    for length in (64, 128):
        assert ex[length]["statistic"] == "cannot" and math.isnan(ex[length]["value"])
        assert ex[length]["status"] == "ok"  # a result, not an error
    positions = [r for r in rows if r["metric"] == "loss_by_position"]
    assert {r["seq_len"] for r in positions} == {32}
    assert [r["position"] for r in positions] == [0, 8, 16, 24]


def test_rope_and_nope_are_scored_at_every_length():
    for pos in ("rope", "none"):
        status, rows = quality_rows("train.steps=6", f"pos={pos}")
        ex = _extrap(rows)
        assert status == "ok" and all(math.isfinite(ex[n]["value"]) for n in (32, 64, 128)), pos
        final = next(r for r in rows if r["metric"] == "val_loss" and r["mode"] == "final")
        assert math.isclose(ex[32]["value"], final["value"], rel_tol=1e-6)  # the same bytes, the same context
        by_position = [r for r in rows if r["metric"] == "loss_by_position" and r["seq_len"] == 128]
        assert [r["position"] for r in by_position] == list(range(0, 128, 8))


def test_every_length_predicts_the_same_bytes():
    spans = torch.arange(2 * 17).reshape(2, 17)  # two spans of 4 x 4 + 1
    for length in (4, 8, 16):
        chunks = chunk_spans(spans, length)
        assert chunks.shape == (2 * 16 // length, length + 1)
        targets = chunks[:, 1:].reshape(2, -1)
        assert torch.equal(targets, spans[:, 1:])
