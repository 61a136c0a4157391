"""A point's rows as they are built: one measurement per row, sharing the point's identity and provenance.

The measurement and the quality runs both append here; ``ablations.results.store`` writes them.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ablations.config.checks import Shape


@dataclass(frozen=True)
class Summary:
    """Robust summary of repeated measurements: median with quartiles and extremes."""

    median: float
    p25: float
    p75: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Summary:
        if not values:
            raise ValueError("no measurements to summarise")
        if len(values) == 1:
            v = values[0]
            return cls(v, v, v, v, v, 1)
        q = statistics.quantiles(values, n=4, method="inclusive")
        return cls(statistics.median(values), q[0], q[2], min(values), max(values), len(values))



@dataclass
class Rows:
    """Accumulates rows that share one identity and provenance."""

    base: dict
    rows: list[dict] = field(default_factory=list)

    def add(self, metric: str, value: float | int | None, unit: str, *, mode: str = "", shape: Shape | None = None,
            statistic: str = "exact", summary: Summary | None = None, **extra: object) -> None:
        row = dict(self.base, metric=metric, value=value, unit=unit, mode=mode, statistic=statistic, **extra)
        if shape is not None:
            row.update(batch=shape.batch, seq_len=shape.seq)
        if summary is not None:
            row.update(lo=summary.p25, hi=summary.p75, min=summary.min, max=summary.max, n=summary.n)
        row.setdefault("status", "ok")
        row["time"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.rows.append(row)
