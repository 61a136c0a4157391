"""When a sequential rule may look: the planned counts shared by the timing rounds (``ablations.measure.intervals``)
and the quality seeds (``ablations.quality.seeds``), which read their bounds from the config."""

from __future__ import annotations

import math


def planned_looks(first: int, last: int, whole: int = 1) -> list[int]:
    """The counts at which a sequential rule may look: ``first``, then about half as many again each time (rounded
    up to a multiple of ``whole``), ending at ``last``. Few looks cost little width under Bonferroni; the timing
    rounds (``RoundsRule``) and the quality seeds (``ablations.quality.seeds``) share this schedule."""
    if first >= last:
        return [last]
    out = [first]
    while out[-1] < last:
        nxt = math.ceil(out[-1] * 1.5)
        out.append(min(last, nxt + (-nxt) % whole))
    return out
