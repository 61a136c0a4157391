"""The learning-rate scan: each arm's best rate, found on scan seeds and then judged on others.

``scan`` is the search alone, over any mean loss per rate: a log-spaced grid (``train.lr_scan_grid`` x
``train.shared_lr``, an octave apart and spanning at least 16x), extended an octave past whichever edge holds the best
until the best is inside the grid (at most ``train.lr_scan_extend`` times: a best still on the edge is reported as
such), then one half-octave either side of the best. Every rate lies on one lattice, ``shared_lr`` x 2^(k/2), rounded
to three significant digits, so a rate committed as configuration is exactly the one scanned. A rate whose run
diverged on any seed scores infinity.

**The choice keeps a margin from the edge of stability** (``train.lr_scan_margin``, the rule ``guarded``): each rate
is scored by the worst mean loss over itself and the ``margin`` rates tried above it, and the rate of the lowest score
is chosen. Past its best, loss against rate climbs steeply and where it starts to climb moves from seed to seed; the
plain lowest mean picks the last rate before the climb, which spikes on the seeds that were not scanned (at the main
job's model the plain choice lost up to 0.10 nats/byte on fresh seeds, ``results/reference/lr_scan``). Scoring a
rate by its neighbour above asks that it be good even if the climb begins a half-octave sooner; ``margin=0`` is the
plain lowest mean. The scan refines a half-octave either side of the guarded choice too, then the
``train.lr_scan_leaders`` best by it are scored again on the ``train.lr_scan_confirm_seeds`` as well (each leader with
its neighbours above), and the best of them is chosen.

**A rescan starts from the rate chosen before** (``train.lr_scan_from=tuned``): a regime whose rates were carried
from a neighbouring regime's scan (the horizons past the scanned one) starts each arm at half, once and twice its
carried rate instead of the grid, and extends and refines from there as a grid scan does. The grid at the neighbouring
regime has already bracketed the best; the rescan asks only whether training longer moved it.

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
# Where a scan starts (``train.lr_scan_from``): the grid, or an octave either side of the arm's tuned rate, the rescan
# of a regime whose rates were carried from a neighbouring one's scan (the grid there bracketed them first).
SCAN_STARTS = ("grid", "tuned")


def start_rates(tc: TrainConfig, tuned_rate: float) -> list[float] | None:
    """The rates an arm's scan starts from: None for the grid; half, once and twice ``tuned_rate`` under ``tuned``."""
    return None if tc.lr_scan_from == "grid" else [tuned_rate / 2, tuned_rate, tuned_rate * 2]


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
    # Each rate the confirmation seeds trained (the leaders and their neighbours above): its mean over the scan and
    # confirmation seeds together.
    confirmed: dict[float, float] = field(default_factory=dict)
    # The rates tried above the chosen one that its score also took (``guarded``): 0 is the plain lowest mean.
    margin: int = 0
    # How many leading rates the confirmation seeds scored again (each with its ``margin`` neighbours above).
    leaders: int = 0
    # The rates the scan started from where not a grid (``start``): a rescan around a rate chosen before.
    started: tuple[float, ...] = ()

    def line(self) -> str:
        rates = sorted(self.losses)
        edge = "; the lowest mean is on the grid's edge, extended as far as allowed" if self.on_edge else ""
        confirmed = f", the {self.leaders} best confirmed on more seeds" if self.confirmed else ""
        rule = (f"; each rate scored by its worst with the {self.margin} tried above it" if self.margin
                else "; the lowest mean")
        start = f" from {', '.join(f'{r:g}' for r in self.started)}" if self.started else ""
        return (f"best {self.best:g} of {len(rates)} rates{start} ({rates[0]:g} to {rates[-1]:g}, grid extended "
                f"{self.extended}x, refined a half-octave either side{confirmed}{rule}){edge}")


def initial_grid(shared: float, grid: Sequence[float]) -> list[float]:
    return sorted({rounded(shared * float(f)) for f in grid})


def scan(mean_loss: Callable[[float], float], shared: float, grid: Sequence[float], max_extend: int,
         start: Sequence[float] | None = None, confirm: Callable[[float], float] | None = None,
         leaders: int = 2, margin: int = 0) -> Scan:
    """The best rate of ``mean_loss`` (lower is better; inf for a diverged rate): the grid ``shared`` x ``grid`` (or
    the rates ``start``), extended while its lowest mean is on an edge, refined a half-octave either side of it and of
    the choice by ``guarded(losses, margin)``. With ``confirm`` (the mean loss over the scan seeds and more), the
    ``leaders`` best rates and their neighbours above are scored again by it and the best of those is chosen."""
    losses: dict[float, float] = {}

    def tried(rate: float) -> bool:
        rate = on_lattice(rate, shared)
        if rate in losses:
            return False
        value = float(mean_loss(rate))
        losses[rate] = value if math.isfinite(value) else math.inf
        return True

    for rate in (start if start is not None else initial_grid(shared, grid)):
        tried(rate)
    extended = 0
    while extended < max_extend:
        best = _best(losses)
        if best not in (min(losses), max(losses)):
            break
        tried(best / 2 if best == min(losses) else best * 2)
        extended += 1
    lowest = _best(losses)
    for rate in (lowest / HALF_OCTAVE, lowest * HALF_OCTAVE):
        tried(rate)
    lowest = _best(losses)
    while True:  # a half-octave either side of the guarded choice, within what was tried, until it stops moving
        best = _best(guarded(losses, margin))
        inside = [r for r in (best / HALF_OCTAVE, best * HALF_OCTAVE) if min(losses) < r < max(losses)]
        if not any([tried(rate) for rate in inside]):
            break
    confirmed: dict[float, float] = {}
    if confirm is not None:
        scores = guarded(losses, margin)
        rates = sorted(losses)
        for leader in sorted(scores, key=lambda r: (scores[r], r))[:leaders]:
            at = rates.index(leader)
            for rate in rates[at:at + 1 + margin]:
                if rate not in confirmed:
                    value = float(confirm(rate))
                    confirmed[rate] = value if math.isfinite(value) else math.inf
        checked = guarded(confirmed, margin, within=rates)
        best = _best({r: checked[r] for r in sorted(scores, key=lambda r: (scores[r], r))[:leaders]})
    started = tuple(sorted(on_lattice(r, shared) for r in start)) if start is not None else ()
    return Scan(dict(sorted(losses.items())), best, extended, lowest in (min(losses), max(losses)), confirmed,
                margin, leaders if confirm is not None else 0, started)


def guarded(losses: dict[float, float], margin: int, within: Sequence[float] | None = None) -> dict[float, float]:
    """Each rate's score under the edge-margin rule: the worst of its own loss and the losses of the ``margin`` rates
    tried above it (``within``: the rates tried, where ``losses`` holds only some of them); a rate with fewer than
    ``margin`` tried above it, or one of them missing from ``losses``, scores infinity (nothing vouches that the climb
    has not begun)."""
    rates = sorted(within if within is not None else losses)
    scores: dict[float, float] = {}
    for at, rate in enumerate(rates):
        if rate not in losses:
            continue
        above = rates[at + 1:at + 1 + margin]
        if len(above) < margin or any(r not in losses for r in above):
            scores[rate] = math.inf
        else:
            scores[rate] = max(losses[r] for r in (rate, *above))
    return scores


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
    if tc.lr_scan_margin < 0:
        raise ConfigError(f"train.lr_scan_margin={tc.lr_scan_margin} must be >= 0 (the rates above a rate its score "
                          "also takes; 0: the lowest mean)")
    if tc.lr_scan_from not in SCAN_STARTS:
        raise ConfigError(f"train.lr_scan_from={tc.lr_scan_from!r} must be one of {', '.join(SCAN_STARTS)}")
    if tc.lr_scan_from == "tuned" and not (tc.tuned_lr or {}).get(tc.name):
        raise ConfigError(f"train.lr_scan_from=tuned at train={tc.name}: train.tuned_lr has no rates for {tc.name} to "
                          "start from; use train.lr_scan_from=grid")
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
