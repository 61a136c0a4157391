"""The learning-rate scan: each arm's best rate, found on scan seeds and then judged on others.

``scan`` is the search alone, over any mean loss per rate: a log-spaced grid (``train.lr_scan_grid`` x
``train.shared_lr``, an octave apart and spanning at least 16x), extended an octave past whichever edge holds the best
until the best is inside the grid (at most ``train.lr_scan_extend`` times: a best still on the edge is reported as
such), then one half-octave either side of the best; then the ``train.lr_scan_leaders`` best rates are trained on the
``train.lr_scan_confirm_seeds`` too, and the best of them by the mean over every scan seed is chosen (near the edge
of stability a rate can look best on two seeds and fail on the next). Every rate lies on one lattice, ``shared_lr`` x
2^(k/2), rounded to three significant digits, so a rate committed as configuration is exactly the one scanned. A rate
whose run diverged on any seed scores infinity.

The scan seeds (``train.lr_scan_seeds`` and the confirmation seeds) are never evaluation seeds (``check_scan``): the
rate is chosen on one set of seeds and the comparison judged on another, so the choice cannot fit the noise it is
judged by.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ablations.config.schema import TrainConfig
from ablations.quality.seeds import seed_rule
from components.config import ConfigError

HALF_OCTAVE = math.sqrt(2.0)
# The smallest span of the initial grid, as largest over smallest rate.
MIN_SPAN = 16.0


def rounded(rate: float) -> float:
    """A rate at three significant digits: the form every scanned rate takes."""
    return float(f"{rate:.3g}")


def on_lattice(rate: float, shared: float) -> float:
    """``rate`` moved to the nearest ``shared`` x 2^(k/2), rounded: every rate a scan tries lies on one half-octave
    lattice, so an octave from a half-octave point is the lattice's own point, not a rounding of a rounding."""
    return rounded(shared * HALF_OCTAVE ** round(2 * math.log2(rate / shared)))


@dataclass(frozen=True)
class Scan:
    """What a scan tried (rate -> mean loss over the scan seeds), the best, how often it extended its grid, and
    whether the best still sits on the edge of everything tried."""

    losses: dict[float, float]
    best: float
    extended: int
    on_edge: bool
    # The leading rates' mean over the scan and confirmation seeds together, where they were confirmed.
    confirmed: dict[float, float] = field(default_factory=dict)

    def line(self) -> str:
        rates = sorted(self.losses)
        edge = "; the best is on the grid's edge, extended as far as allowed" if self.on_edge else ""
        confirmed = f", the {len(self.confirmed)} best confirmed on more seeds" if self.confirmed else ""
        return (f"best {self.best:g} of {len(rates)} rates ({rates[0]:g} to {rates[-1]:g}, grid extended "
                f"{self.extended}x, refined a half-octave either side{confirmed}){edge}")


def initial_grid(shared: float, grid: Sequence[float]) -> list[float]:
    return sorted({rounded(shared * float(f)) for f in grid})


def scan(mean_loss: Callable[[float], float], shared: float, grid: Sequence[float], max_extend: int,
         start: Sequence[float] | None = None, confirm: Callable[[float], float] | None = None,
         leaders: int = 2) -> Scan:
    """The best rate of ``mean_loss`` (lower is better; inf for a diverged rate): the grid ``shared`` x ``grid`` (or
    the rates ``start``), extended while its best is on an edge, then refined a half-octave either side. With
    ``confirm`` (the mean loss over the scan seeds and more), the ``leaders`` best rates are scored again by it and
    the best of those is chosen: a rate on the edge of instability can look best on two seeds and fail on the next."""
    losses: dict[float, float] = {}

    def tried(rate: float) -> None:
        rate = on_lattice(rate, shared)
        if rate not in losses:
            value = float(mean_loss(rate))
            losses[rate] = value if math.isfinite(value) else math.inf

    for rate in (start if start is not None else initial_grid(shared, grid)):
        tried(rate)
    extended = 0
    while extended < max_extend:
        best = _best(losses)
        if best not in (min(losses), max(losses)):
            break
        tried(best / 2 if best == min(losses) else best * 2)
        extended += 1
    best = _best(losses)
    for rate in (best / HALF_OCTAVE, best * HALF_OCTAVE):
        tried(rate)
    best = _best(losses)
    confirmed: dict[float, float] = {}
    if confirm is not None:
        for rate in sorted(losses, key=lambda r: (losses[r], r))[:leaders]:
            value = float(confirm(rate))
            confirmed[rate] = value if math.isfinite(value) else math.inf
        best = _best(confirmed)
    return Scan(dict(sorted(losses.items())), best, extended, best in (min(losses), max(losses)), confirmed)


def _best(losses: dict[float, float]) -> float:
    """The rate of the lowest loss; ties go to the smaller rate (the safer against divergence)."""
    return min(losses, key=lambda rate: (losses[rate], rate))


def check_scan(tc: TrainConfig) -> None:
    """The scan's settings, one line each naming a ``train.`` key; run at the door before any training."""
    if not tc.lr_scan:
        return
    if tc.lr is not None:
        raise ConfigError(f"train.lr_scan=true with train.lr={tc.lr:g}: a scan tunes each arm's own rate; set "
                          "train.lr=null (the shared-rate protocol has nothing to scan)")
    grid = sorted(float(f) for f in tc.lr_scan_grid)
    if len(grid) < 3 or grid[0] <= 0 or grid[-1] / grid[0] < MIN_SPAN:
        raise ConfigError(f"train.lr_scan_grid={list(tc.lr_scan_grid)} must hold at least 3 positive factors "
                          f"spanning at least {MIN_SPAN:g}x (e.g. [0.5, 1, 2, 4, 8])")
    if tc.lr_scan_extend < 0:
        raise ConfigError(f"train.lr_scan_extend={tc.lr_scan_extend} must be >= 0")
    if tc.lr_scan_leaders < 1:
        raise ConfigError(f"train.lr_scan_leaders={tc.lr_scan_leaders} must be >= 1 (the rates confirmed)")
    scan_seeds = [int(s) for s in [*tc.lr_scan_seeds, *tc.lr_scan_confirm_seeds]]
    if not tc.lr_scan_seeds or len(set(scan_seeds)) != len(scan_seeds):
        raise ConfigError(f"train.lr_scan_seeds={list(tc.lr_scan_seeds)} and train.lr_scan_confirm_seeds="
                          f"{list(tc.lr_scan_confirm_seeds)} need at least one scan seed, none repeated")
    rule = seed_rule(tc)
    shared = sorted(set(scan_seeds) & {int(s) for s in rule.seeds})
    if shared:
        raise ConfigError(f"train.lr_scan_seeds={scan_seeds} (with the confirmation seeds) shares {shared} with the "
                          f"evaluation seeds "
                          f"{list(rule.seeds)}: the rate must be judged on seeds it was not chosen on")
