"""A sweep point measured in-process with its timer replaced: every row but the times themselves, in a second.

``point.time_call`` calls the function once and says it took a millisecond; ``point.paired_with`` says the variant
took twice the baseline's millisecond every round. Nothing is timed, so the rows' arithmetic can be checked exactly.
"""

from __future__ import annotations

import pytest
import torch

from ablations.measure import point
from ablations.measure.timing import PairedTiming
from ablations.results.rows import Rows
from ablations.runner import plan_point
from tests.quality.helpers import composed

LATENCY = 2e-3  # the variant's per-call seconds every paired round reports


def untimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(point, "time_call", lambda fn, device: (fn(), 1e-3))
    monkeypatch.setattr(point, "paired_with", lambda rule, a, b, **kw: PairedTiming([LATENCY] * 2, [1e-3] * 2))


def point_rows(*overrides: str, variant: str = "point") -> list[dict]:
    """The rows one point of ``profile=smoke model=tiny device=cpu <overrides>`` writes, timing on (with ``untimed``
    set). The device is named: ``device=auto`` would pick a GPU where there is one."""
    cfg = composed("device=cpu", *overrides)
    rows = Rows(base={"variant": variant})
    plan = plan_point(cfg).timing
    assert plan.machine.device == torch.device("cpu") and plan.machine.dtype == torch.float32 and plan.timed
    point.measure_point(plan, rows)
    return rows.rows
