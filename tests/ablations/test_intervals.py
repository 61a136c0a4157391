"""The sequential stopping rule keeps its interval's coverage; the plain rule, looking as often, does not.

Rounds are drawn from a skewed, heavy-tailed distribution with a known median (a lognormal ratio with a few
rounds spoiled by a neighbour, as on a shared machine); the rule stops at the first look whose interval is
narrow enough, and we count how often the interval it stopped with covers the true median.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from ablations.config.schema import ProfileConfig
from ablations.measure.intervals import RoundsRule, fewest_rounds, median_interval, rounds_rule_of
from ablations.measure.timing import time_paired
from components.config import ConfigError

TRUE_MEDIAN = 1.05


def draw_rounds(rng: np.random.Generator, n: int) -> list[float]:
    """Right-skewed rounds with median exactly ``TRUE_MEDIAN``: its log is a scaled Exp(1) shifted by its median
    (ln 2), so most rounds sit a little below the median and a tail of slow ones (a neighbour's preemption)
    reaches far above it."""
    return (TRUE_MEDIAN * np.exp(0.04 * (rng.exponential(1.0, n) - np.log(2)))).tolist()


def run_rule(rule: RoundsRule, rng: np.random.Generator, level: float | None = None) -> tuple[bool, int]:
    """One sequential measurement: (whether the final interval covers the true median, rounds used). ``level``
    overrides the per-look level (the plain rule: every look at the nominal 95%)."""
    rounds = draw_rounds(rng, rule.max_rounds)
    for n in rule.looks:
        iv = median_interval(rounds[:n], level or rule.look_confidence)
        if iv.halfwidth <= rule.target_halfwidth or n == rule.max_rounds:
            return iv.lo <= TRUE_MEDIAN <= iv.hi, n
    raise AssertionError("the last look is the budget")


def test_coverage_holds_under_optional_stopping():
    # A target these rounds reach near the budget: where stopping on a narrow interval bites most.
    rule = RoundsRule(min_rounds=8, max_rounds=48, target_halfwidth=0.01)
    assert rule.looks == [8, 12, 18, 28, 42, 48] and rule.problem() is None
    trials = 3000  # a binomial standard error of 0.4 points at 95%
    rng = np.random.default_rng(1)
    covered = sum(run_rule(rule, rng)[0] for _ in range(trials)) / trials
    assert covered >= 0.95, covered
    # The same rounds, every look at the nominal 95% and stopping on the first narrow one: short of 95% by more
    # than three standard errors (93.4% with this seed).
    rng = np.random.default_rng(1)
    plain = sum(run_rule(rule, rng, level=0.95)[0] for _ in range(trials)) / trials
    assert plain < 0.95 - 3 * 0.004, plain


def test_a_reachable_target_stops_early():
    rule = RoundsRule(min_rounds=8, max_rounds=48, target_halfwidth=0.03)
    rng = np.random.default_rng(2)
    used = [run_rule(rule, rng)[1] for _ in range(500)]
    assert np.mean(used) < 0.6 * rule.max_rounds and min(used) == rule.min_rounds


def test_looks_and_settings():
    assert RoundsRule(min_rounds=8, max_rounds=8, target_halfwidth=0.02).looks == [8]
    assert RoundsRule(min_rounds=16, max_rounds=16).looks == [16]  # fixed rounds: one look at 95%
    assert RoundsRule(min_rounds=16, max_rounds=16).look_confidence == pytest.approx(0.95)
    assert RoundsRule(min_rounds=8, max_rounds=16).looks == [8, 12, 16]  # no target: looks for the caller's test
    assert all(n % 2 == 0 for n in RoundsRule(min_rounds=6, max_rounds=40, target_halfwidth=0.02).looks)
    assert fewest_rounds(0.95) == 6
    too_few = RoundsRule(min_rounds=6, max_rounds=64, target_halfwidth=0.02)
    assert "min_rounds=6 is too few for a 95% interval held over" in too_few.problem()
    assert "must be a fraction" in RoundsRule(8, 16, target_halfwidth=2.0).problem()
    assert "is more than max_rounds" in RoundsRule(20, 16, target_halfwidth=0.02).problem()


def test_done_and_stopped_on():
    p = RoundsRule(min_rounds=8, max_rounds=18, target_halfwidth=0.05)
    tight = [1.0, 1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 1.002]
    wide = [1.0, 1.3, 0.7, 1.0, 1.2, 0.8, 1.1, 0.9]
    assert p.done(tight) and p.stopped_on(tight) == "target"
    assert not p.done(wide)
    assert not p.done(tight + [1.0])  # nine rounds is not a look
    assert p.done(wide * 3) and p.stopped_on((wide * 3)[:18]) == "budget"
    assert RoundsRule(8, 8, target_halfwidth=0.05).stopped_on(tight) == "fixed"


@pytest.mark.parametrize("profile,message", [
    ({"min_rounds": 8}, "profile.min_rounds and profile.max_rounds apply with profile.target_halfwidth"),
    ({"target_halfwidth": 0.02}, "profile.target_halfwidth=0.02 needs profile.min_rounds and profile.max_rounds"),
    ({"target_halfwidth": 0.02, "min_rounds": 4, "max_rounds": 40}, "profile.min_rounds=4 is too few"),
    ({"target_halfwidth": 5, "min_rounds": 8, "max_rounds": 40}, "profile.target_halfwidth=5.0 must be a fraction"),
])
def test_profile_settings_are_checked(profile, message):
    base = {"rounds": 8, "target_halfwidth": None, "min_rounds": None, "max_rounds": None}
    with pytest.raises(ConfigError, match=re.escape(message)):
        rounds_rule_of(ProfileConfig(name="test", **{**base, **profile}))


def test_profile_rule():
    fixed = rounds_rule_of(ProfileConfig(name="test", rounds=8), fixed_rounds=16)
    assert fixed.looks == [16] and fixed.stopped_on([1.0] * 16) == "fixed"
    seq = rounds_rule_of(ProfileConfig(name="test", rounds=8, target_halfwidth=0.02, min_rounds=8, max_rounds=48))
    assert seq.looks[0] == 8 and seq.max_rounds == 48 and seq.target_halfwidth == 0.02


def test_paired_timing_stops_when_asked():
    paired = time_paired(lambda: None, lambda: None, rounds=40, min_run_time=0.001, warmup=1,
                         device=torch.device("cpu"), until=lambda ratios: len(ratios) == 6)
    assert len(paired.ratios) == 6 and len(paired.a) == len(paired.b) == 6


def test_the_target_holds_at_the_headline_unless_the_scope_is_every():
    settings = {"rounds": 8, "target_halfwidth": 0.03, "min_rounds": 8, "max_rounds": 48}
    headline_scope = ProfileConfig(name="test", **{**settings, "target_scope": "headline"})
    assert rounds_rule_of(headline_scope, headline=True).target_halfwidth == 0.03
    other = rounds_rule_of(headline_scope, fixed_rounds=16, headline=False)
    assert other.looks == [16] and other.target_halfwidth is None
    every = ProfileConfig(name="test", **{**settings, "target_scope": "every"})
    assert rounds_rule_of(every, headline=False).max_rounds == 48
    with pytest.raises(ConfigError, match=re.escape("profile.target_scope=some is not one of headline, every")):
        rounds_rule_of(ProfileConfig(name="test", **{**settings, "target_scope": "some"}))


def test_a_point_spends_its_target_on_the_headline_shape_and_decode_only(monkeypatch):
    """The rules a point hands its paired timings: sequential at the headline forward/train shape and the longest
    decode context at its largest batch (``ablations.measure.shapes``, what the report reads), fixed
    elsewhere."""
    from ablations.measure import point
    from ablations.measure.shapes import headline_decode, headline_shape
    from tests.ablations.untimed import point_rows, untimed

    untimed(monkeypatch)
    seen = []
    fake = point.paired_with
    monkeypatch.setattr(point, "paired_with", lambda rule, a, b, **kw: seen.append(rule) or fake(rule, a, b, **kw))
    shapes, contexts, batches = ["1x16", "2x16", "1x32"], [16, 32], [1, 2]
    point_rows("norm=rmsnorm", f"profile.shapes=[{','.join(shapes)}]", f"profile.decode_contexts={contexts}",
               f"profile.decode_batch_sizes={batches}", "profile.target_halfwidth=0.03", "profile.min_rounds=8",
               "profile.max_rounds=24", "profile.prefill_max_tokens=0", "profile.components=false")
    sequential = [r.target_halfwidth is not None for r in seen]
    # forward and train per shape, in order, then decode per (context, batch)
    timed_shapes = [s for s in shapes for _ in ("forward", "train")]
    decode = [(b, context) for context in contexts for b in batches]
    best = "x".join(map(str, headline_shape(tuple(map(int, s.split("x"))) for s in shapes)))
    assert sequential == [s == best for s in timed_shapes] + [d == headline_decode(decode) for d in decode]
    assert best == "1x32" and headline_decode(decode) == (2, 32)  # equal tokens: the longer sequence


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_the_interval_ranks_are_scipys_binomial_ranks(confidence):
    # The ranks are computed exactly with integers (no scipy at a command's start); scipy's binom is the reference.
    from scipy import stats

    from ablations.measure.intervals import _rank

    for n in range(1, 201):
        tail = (1 - confidence) / 2
        k = int(stats.binom.ppf(tail, n, 0.5))
        while k >= 1 and stats.binom.cdf(k - 1, n, 0.5) > tail:
            k -= 1
        k = max(k, 1)
        got_k, coverage = _rank(n, confidence)
        assert got_k == k, n
        assert coverage == pytest.approx(1 - 2 * stats.binom.cdf(k - 1, n, 0.5), abs=1e-12)
