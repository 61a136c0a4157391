"""The stand-in schedule against the full one (ablations.report.schedule_check), on committed cosine rows made into a
stand-in with known gaps; and the answer read at a horizon another table chose (verdicts.at_settled_horizon)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ablations.quality.horizon import Settled
from ablations.report.headline import found_answers
from ablations.report.schedule_check import gap_frame, gaps, load_folders, main, page, schedule_name, summary_line
from ablations.report.tables import load_table

ROOT = Path(__file__).resolve().parents[2]
COSINE = ROOT / "results" / "reference" / "horizon_tuned" / "cosine"
RUN_AT = 2200  # the 40-bytes-per-parameter length the committed cosine rows trained
# The committed page's folders, stand-in then full, as the command names them from the repository root.
SOURCES = (["results/reference/horizon_tuned"],
           ["results/reference/horizon_tuned/cosine", "results/reference/horizon_tuned/cosine_40"])


@pytest.fixture(scope="module")
def full() -> pd.DataFrame:
    return load_table(COSINE)


def _finals(table: pd.DataFrame, variant: str, steps: int = RUN_AT) -> pd.Series:
    f = table[(table["metric"] == "val_loss") & (table["mode"] == "final") & (table["variant"] == variant)
              & (table["train_steps"] == steps)]
    return f.set_index("seed")["value"].astype(float).sort_index()


def _stand_in(full: pd.DataFrame, shifts: dict[int, float], variant: str = "rope") -> pd.DataFrame:
    """``full`` relabelled wsd, with ``variant``'s final loss at RUN_AT moved by ``shifts[seed]``."""
    table = full.assign(schedule="wsd")
    hit = ((table["metric"] == "val_loss") & (table["mode"] == "final") & (table["variant"] == variant)
           & (table["train_steps"] == RUN_AT))
    table.loc[hit, "value"] = table.loc[hit, "value"].astype(float) + table.loc[hit, "seed"].map(shifts)
    return table


def test_a_gap_added_to_one_arm_is_read_back_with_its_t_interval(full):
    shifts = {0: 0.010, 1: 0.014, 2: 0.018}
    found = {(g.steps, g.variant): g for g in gaps(_stand_in(full, shifts), full)}
    rope = found[(RUN_AT, "rope")]
    mean, sd = np.mean(list(shifts.values())), np.std(list(shifts.values()), ddof=1)
    lo, hi = stats.t.interval(0.95, 2, loc=mean, scale=sd / np.sqrt(3))
    assert rope.gap == pytest.approx((mean, lo, hi))
    assert rope.detected and rope.n == 3
    # every other comparison trained the same runs under both: no gap
    assert all(g.gap[0] == pytest.approx(0) and not g.detected for k, g in found.items() if k != (RUN_AT, "rope"))
    assert {g.variant for g in found.values()} == {"rope", "llama2"}


def test_the_seed_spread_is_the_full_schedules_sd_of_delta_pooled_over_one_length(full):
    found = [g for g in gaps(_stand_in(full, {0: 0.0, 1: 0.0, 2: 0.0}), full) if g.steps == RUN_AT]
    base = _finals(full, "gpt2")
    variances = [np.var(_finals(full, g.variant) - base, ddof=1) for g in found]
    assert all(g.seed_sd == pytest.approx(np.sqrt(np.mean(variances))) for g in found)


def test_a_gap_larger_than_the_seed_spread_does_not_match(full):
    spread = next(g.seed_sd for g in gaps(full.assign(schedule="wsd"), full) if g.steps == RUN_AT)
    small, large = (gaps(_stand_in(full, dict.fromkeys(range(3), f * spread)), full) for f in (0.5, 2.0))
    assert next(g for g in small if (g.steps, g.variant) == (RUN_AT, "rope")).within_spread
    assert not next(g for g in large if (g.steps, g.variant) == (RUN_AT, "rope")).within_spread


def test_the_table_names_both_schedules_and_each_verdict(full):
    stand_in = _stand_in(full, {0: 0.2, 1: 0.2, 2: 0.2})  # RoPE's gain at 40 turned into a harm
    frame = gap_frame(stand_in, full)
    assert (schedule_name(stand_in), schedule_name(full)) == ("wsd", "cosine")
    assert {"Δ cosine", "Δ wsd", "wsd − cosine (paired)", "verdict cosine", "verdict wsd"} <= set(frame.columns)
    rope = frame[(frame["choice"] == "learned → RoPE") & (frame["bytes/param"] == "40")].iloc[0]
    assert rope["verdict cosine"] == "better" and rope["verdict wsd"] != "better"
    line = summary_line(gaps(stand_in, full), "wsd", "cosine", frame)
    assert "3 of 4 keep their verdict" in line and "3 of 4 keep Δ's sign" in line


def test_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere"), "--full", str(COSINE)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere" in err


def test_the_answer_reads_the_horizon_another_table_chose(full):
    """Without a chosen horizon the horizon sweep is read at its longest length; with one, at its length."""
    def rope(settled: Settled | None) -> float:
        return next(a.loss.diff for a in found_answers(full, settled) if "RoPE" in a.choice)
    base = _finals(full, "gpt2", 1100)
    at_20 = float((_finals(full, "rope", 1100) - base).mean())
    at_40 = float((_finals(full, "rope") - _finals(full, "gpt2")).mean())
    assert rope(None) == pytest.approx(at_40)
    assert rope(Settled(steps=1100, bytes_per_param=20.0, longest=False, ranges={})) == pytest.approx(at_20)


def test_the_committed_page_is_what_the_rows_build_now():
    """``cosine_40/schedule_check.md`` is the command's page on the committed rows (the command is in its first
    lines), so a rebuilt reference cannot leave it stale."""
    committed = ROOT / "results" / "reference" / "horizon_tuned" / "cosine_40" / "schedule_check.md"
    stand_in, full = [Path(p) for p in SOURCES[0]], [Path(p) for p in SOURCES[1]]
    built = page(load_folders([ROOT / p for p in stand_in]), load_folders([ROOT / p for p in full]), [*stand_in, *full])
    assert committed.read_text() == built, (
        "stale: python -m ablations.report.schedule_check "
        f"{' '.join(SOURCES[0])} --full {' '.join(SOURCES[1])} --out {committed.relative_to(ROOT)}")
