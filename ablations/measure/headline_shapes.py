"""Which measured shapes are the headline: the ones the report's speed table, the README and the claims read.

Declared once here so that the measurement spends its precision where the report looks: the profile's
``target_halfwidth`` is held at these (``profile.precision_scope=headline``), and the report picks the same cells
from a results table (``ablations.report.comparison``).
"""

from __future__ import annotations

from collections.abc import Iterable


def headline_shape(shapes: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """The forward/train (batch, seq) with the most tokens, ties to the longer sequence: where the matrix
    products dominate, so the ratio says most about the design and least about per-call overhead."""
    return max(shapes, key=lambda s: (s[0] * s[1], s[1]), default=None)


def headline_decode(points: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """The decode (batch, context) at the longest context, the largest batch there: where the KV cache the
    design sizes is the most of what a step reads."""
    return max(points, key=lambda p: (p[1], p[0]), default=None)
