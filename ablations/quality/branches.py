"""Cool-down branches: one warmup-stable-decay run that also trains its shorter lengths (Hägele et al. 2024).

A wsd run (``train.schedule=wsd``) holds its peak rate until its cool-down, the last ``train.cooldown`` share of its
steps. Until a shorter run of the same settings begins its own cool-down, the two are the same run step for step: the
same rate and, since a seed's data order is one draw whose shorter prefixes are the shorter runs' orders
(``windows.train_starts``), the same bytes. So a run of the longest length forks each shorter one there, model and
optimizer state copied, and trains the branch's cool-down alone (``ablations.quality.train``): every length of an arm
for the cost of the longest plus each shorter one's cool-down. A branch is the seed it stands for, not an
approximation of it (``tests/quality/test_branches.py`` checks them bit for bit), so its rows go into the seed ledger
as that length's own.

``train.branch_steps`` names the lengths a sweep will ask for (the horizons, a budget curve's knots); training any
one of them trains them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import replace

from ablations.config.schema import TrainConfig
from ablations.quality.optimizer import decay_start

# What may differ between a run and its branches: the length, and what each records and when.
RECORDING = ("name", "steps", "eval_interval", "branch_steps")


def at_length(tc: TrainConfig, steps: int) -> TrainConfig:
    """``tc`` trained for ``steps``: a run validated only at its ends (``eval_interval`` its length, as a budget run
    is) stays so."""
    every = steps if tc.eval_interval == tc.steps else tc.eval_interval
    return replace(tc, steps=int(steps), eval_interval=every)


def lengths(tc: TrainConfig) -> list[int]:
    """Every length one run of ``tc`` trains: its own and ``branch_steps``, under wsd; else its own alone."""
    if tc.schedule != "wsd":
        return [int(tc.steps)]
    return sorted({int(tc.steps), *(int(s) for s in tc.branch_steps)})


def check_branches(tc: TrainConfig, branches: Sequence[TrainConfig]) -> None:
    """Whether ``branches`` are cool-down branches of ``tc``: shorter wsd runs of the same settings, each tail
    average inside its own cool-down. A ValueError names what differs."""
    if not branches:
        return
    if tc.schedule != "wsd":
        raise ValueError(f"cool-down branches need train.schedule=wsd, not {tc.schedule!r}")
    mine = {k: v for k, v in dataclasses.asdict(tc).items() if k not in RECORDING}
    for branch in branches:
        other = {k: v for k, v in dataclasses.asdict(branch).items() if k not in RECORDING}
        differ = sorted(k for k in mine if mine[k] != other[k])
        if differ:
            raise ValueError(f"a branch of {branch.steps} steps differs from its run in {', '.join(differ)}")
        if not 0 < branch.steps < tc.steps:
            raise ValueError(f"a branch of {branch.steps} steps is not shorter than its run's {tc.steps}")
        cool = branch.steps - decay_start(branch)
        if round(branch.steps * float(branch.average_last or 0.0)) > cool:
            raise ValueError(f"a branch of {branch.steps} steps averages its weights over more steps than its "
                             f"cool-down's {cool}")
