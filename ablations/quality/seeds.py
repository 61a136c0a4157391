"""How many seeds a quality comparison gets: fixed, or until its question is answered.

With ``train.target_mde`` set, a point adds seeds (each trained for both arms of the pair: the point's model and
its baseline's) until its comparison with the baseline is **answered**, or ``train.max_seeds`` are spent:

- a difference found: the paired t interval excludes zero, or
- no difference as large as the target: the minimum detectable effect (80% power) is at most ``target_mde``.

Both are read at the level the final verdict holds the comparison to, so a point that stopped on "found" is
reported as a difference and one that stopped on "bounded" reports an MDE at or below the target.

**The rule and why.** Looking after every seed and stopping the first time the interval excludes zero would find
differences that are not there far more often than alpha says (optional stopping). So the rule looks only at a
few planned seed counts (``looks``: ``min_seeds``, then about half as many again each time, up to ``max_seeds``;
the schedule the timing rounds use) and holds each look at ``alpha / (family x looks)``: Bonferroni over the
sweep's comparisons and over the looks. The chance that any look of any comparison declares a difference that
is not there is then at most alpha, whatever the stopping read. The verdicts keep that guarantee by testing
``looks x p`` (a valid p-value under any stopping among the looks) with Holm across the sweep
(``ablations.quality.stats``), which is never stricter than the Bonferroni level the stopping used, so a point
that stopped on "found" is always reported as a difference. Bonferroni rather than an alpha-spending boundary
(O'Brien-Fleming, Pocock): it holds for the "bounded" stop too, needs no table, and with four looks it costs
about one seed; ``tests/quality/test_seeds.py`` measures both error rates by simulation.

The family is the number of comparisons the sweep makes of the final validation loss, as the run's start counts
them (``family_of``) and passes to every point in its config (``train.family``, ``family_size``); a point run alone
is a family of one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ablations.config.schema import TrainConfig
from ablations.quality.inference import ALPHA, RUNG_SWEEP, PairedTest, holm, minimum_detectable_effect, planned_looks
from components.config import ConfigError

FIXED, BASELINE, FOUND, BOUNDED, BUDGET = "fixed", "baseline", "difference", "bounded", "budget"
STOPS = {
    FIXED: "fixed seeds (train.target_mde=null)",
    BASELINE: "the baseline: seeds as its comparisons asked",
    FOUND: "stopped on target: a difference found",
    BOUNDED: "stopped on target: no difference as large as the target",
    BUDGET: "stopped on budget: max_seeds spent, not answered",
}


@dataclass(frozen=True)
class SeedRule:
    """The seed sequence of one point and when it may stop (module docstring)."""

    seeds: tuple[int, ...]
    min_seeds: int
    target_mde: float | None = None
    alpha: float = ALPHA

    @property
    def sequential(self) -> bool:
        return self.target_mde is not None

    @property
    def looks(self) -> list[int]:
        return planned_looks(self.min_seeds, len(self.seeds)) if self.sequential else [len(self.seeds)]

    def level(self, family: int) -> float:
        """Each look's two-sided level: alpha over the family's comparisons and the looks (Bonferroni)."""
        return self.alpha / max(1, family) / len(self.looks)

    def answer(self, test: PairedTest, family: int) -> str | None:
        """``difference`` or ``bounded`` when the comparison is answered at this look's level, else None."""
        level = self.level(family)
        if test.n < 2 or math.isnan(test.p):
            return None
        if test.p < level:
            return FOUND
        mde = minimum_detectable_effect(test.sd, test.n, level) if test.sd > 0 else 0.0
        return BOUNDED if mde <= self.target_mde else None

    def stop(self, tried: int, test: PairedTest | None, family: int) -> str | None:
        """Whether the point stops after ``tried`` seeds: the reason (``STOPS``), or None to go on."""
        if not self.sequential:
            return FIXED if tried >= len(self.seeds) else None
        if tried not in self.looks:
            return None
        answered = self.answer(test, family) if test is not None else None
        if answered:
            return answered
        return BUDGET if tried >= len(self.seeds) else None


def seed_rule(tc: TrainConfig) -> SeedRule:
    """The rule of ``train``: fixed ``train.seeds``, or with ``target_mde`` the seeds ``train.seeds`` then the next
    integers up to ``max_seeds``, looked at from ``min_seeds``. Bad settings are one ``ConfigError`` line."""
    seeds = [int(s) for s in tc.seeds]
    target, low, high = tc.target_mde, tc.min_seeds, tc.max_seeds
    if target is None:
        if low is not None or high is not None:
            raise ConfigError("train.min_seeds and train.max_seeds apply with train.target_mde (e.g. 0.02 nats/byte); "
                              "set it, or leave both null for the fixed train.seeds")
        return SeedRule(tuple(seeds), len(seeds))
    if not target > 0:
        raise ConfigError(f"train.target_mde={target} must be > 0 (nats/byte), or null for fixed seeds")
    if low is None or high is None:
        raise ConfigError(f"train.target_mde={target} needs train.min_seeds and train.max_seeds (e.g. 3 and 12)")
    if not 3 <= int(low) <= int(high):
        raise ConfigError(f"train.min_seeds={low} and train.max_seeds={high} need 3 <= min_seeds <= max_seeds "
                          "(two seeds leave one degree of freedom: no look could answer)")
    if len(seeds) > int(high):
        raise ConfigError(f"train.seeds={seeds} lists more seeds than train.max_seeds={high}")
    while len(seeds) < int(high):
        seeds.append(max(seeds, default=-1) + 1)
    return SeedRule(tuple(seeds), int(low), float(target))


def family_of(sweep: str, compared: int) -> int:
    """The final-loss comparisons a sweep makes, from its points that compare with their baseline: one each, and
    in the ladder also each rung against the rung below (the first rung's are one comparison)."""
    return compared + (max(0, compared - 1) if sweep == RUNG_SWEEP else 0)


def family_size(tc: TrainConfig) -> int:
    """The comparisons of the running sweep (``train.family``, which the run's start sets for every point, also in a
    launcher's worker processes); 1 for a point run on its own or in a test."""
    return max(1, int(tc.family or 1))


def simulate(rule: SeedRule, effect: float, family: int, sweeps: int, seed: int) -> dict[str, float]:
    """Sweeps of ``family`` comparisons whose paired differences are N(effect, 1), each stopped by ``rule``, then
    judged as the report judges them (Holm over looks x p). Returns the family-wise rate of declared differences
    and the fraction of comparisons per way of stopping."""
    from scipy import stats  # here, not at the top: a command's start (every run's checks) need not pay for it
    rng = np.random.default_rng(seed)
    declared, ends = 0, {FOUND: 0, BOUNDED: 0, BUDGET: 0}
    for _ in range(sweeps):
        p_seq = []
        for _ in range(family):
            x = rng.normal(effect, 1.0, len(rule.seeds))
            for tried in range(1, len(rule.seeds) + 1):
                test = None
                if tried >= 2:
                    xs = x[:tried]
                    sd = float(xs.std(ddof=1))
                    p = float(2 * stats.t.sf(abs(xs.mean()) / (sd / math.sqrt(tried)), tried - 1))
                    test = PairedTest(float(xs.mean()), sd, tried, p)
                stopped = rule.stop(tried, test, family)
                if stopped:
                    break
            ends[stopped] += 1
            p_seq.append(min(1.0, len(rule.looks) * test.p))
            if stopped == FOUND and not holm(p_seq[-1:] + [1.0] * (family - 1))[0][0] < rule.alpha:
                raise AssertionError("a comparison stopped on 'found' that Holm would not report as a difference")
        declared += bool((holm(p_seq)[0] < rule.alpha).any())
    return {"fwer": declared / sweeps, **{k: v / (sweeps * family) for k, v in ends.items()}}


def main() -> None:
    """The error rates quoted in docs/quality.md: looks 3, 5, 8, 12 with a target of 1.5 sd of the differences."""
    rule = SeedRule(tuple(range(12)), 3, target_mde=1.5)
    print("| truth | family | a difference declared (family-wise) | found, per comparison | bounded | budget |")
    print("|---|---|---|---|---|---|")
    for effect, label in ((0.0, "d = 0"), (1.5, "d = target")):
        for family in (1, 6):
            r = simulate(rule, effect, family, 2000, seed=family)
            print(f"| {label} | {family} | {100 * r['fwer']:.1f}% | {100 * r[FOUND]:.1f}% | {100 * r[BOUNDED]:.1f}% | "
                  f"{100 * r[BUDGET]:.1f}% |")


if __name__ == "__main__":
    main()
