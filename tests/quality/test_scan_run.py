"""A point run with ``train.lr_scan``: every scan seed's loss and the choice are rows, the evaluation seeds train at
the rate chosen (a finished run's seeds put back into a ledger: ``tests/quality/test_reuse_seeds.py``)."""

from __future__ import annotations

import pandas as pd
import torch

import ablations.quality.arms as arms
from ablations.quality.learning_rate import SCANNED
from ablations.quality.lr_scan import guarded
from ablations.quality.run import run_quality
from ablations.results.rows import Rows
from ablations.runner import plan_point
from tests.quality.helpers import composed

SHORT = ("train.lr_scan=true", "train.lr=null", "train.steps=4", "train.warmup=1", "train.eval_interval=4",
         "train.extrapolation=[1]", "train.lr_scan_grid=[0.25,1,4]", "train.lr_scan_extend=0", "train.budgets=[]")


def _scan(folder, monkeypatch=None) -> tuple[str, list[dict], list[tuple[int, float]]]:
    """One scanning point in ``folder``: its status, rows and the (seed, rate) of every seed trained."""
    trained: list[tuple[int, float]] = []
    real = arms.train

    def counted(q, corpus, tc, seed, *args, **kwargs):
        trained.append((int(seed), float(tc.lr)))
        return real(q, corpus, tc, seed, *args, **kwargs)

    if monkeypatch is not None:
        monkeypatch.setattr(arms, "train", counted)
    torch.set_num_threads(1)
    rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0, "point": "p"})
    status = run_quality(plan_point(composed(*SHORT)).quality, rows, torch.device("cpu"), folder)
    return status, rows.rows, trained


def test_a_scanning_point_records_each_scan_seed_and_evaluates_at_the_rate_chosen(tmp_path, monkeypatch):
    status, rows, trained = _scan(tmp_path, monkeypatch)
    assert status == "ok"
    scanned = pd.DataFrame([r for r in rows if r["metric"] == "lr_scan_loss"])
    tc = plan_point(composed(*SHORT)).quality.train
    # the scan seeds at every rate tried, the confirmation seeds at the leaders and their neighbours above
    confirmed = scanned.groupby("lr")["seed"].nunique()
    confirmed = confirmed[confirmed == len(tc.lr_scan_seeds) + len(tc.lr_scan_confirm_seeds)].index
    assert scanned["lr"].nunique() >= 5 and len(confirmed) >= tc.lr_scan_leaders
    assert len(scanned) == scanned["lr"].nunique() * len(tc.lr_scan_seeds) + len(confirmed) * len(
        tc.lr_scan_confirm_seeds)
    assert set(scanned["seed"]) == {*tc.lr_scan_seeds, *tc.lr_scan_confirm_seeds}
    (chosen,) = [r for r in rows if r["metric"] == "lr_tuned"]
    screen = scanned[scanned["seed"].isin(tc.lr_scan_seeds)].groupby("lr")["value"].mean().to_dict()
    scores = guarded(screen, tc.lr_scan_margin)
    leaders = sorted(scores, key=lambda r: (scores[r], r))[:tc.lr_scan_leaders]
    every = scanned[scanned["lr"].isin(confirmed)].groupby("lr")["value"].mean().to_dict()
    checked = guarded(every, tc.lr_scan_margin, within=sorted(screen))
    assert chosen["value"] == min(leaders, key=lambda r: (checked[r], r))  # the guarded best over every seed
    finals = [r for r in rows if r["metric"] == "val_loss" and r["mode"] == "final"]
    assert {r["seed"] for r in finals} == set(tc.seeds)
    assert all(r["lr"] == chosen["value"] and r["lr_source"].startswith(SCANNED) for r in finals)
    assert len(trained) == len(scanned) + len(tc.seeds)


def test_an_eager_step_reruns_two_seeds_to_the_same_losses_bit_for_bit():
    short = ("train.steps=4", "train.warmup=1", "train.eval_interval=4", "train.extrapolation=[1]", "train.budgets=[]",
             "train.seeds=[0,1]", "train.target_mde=null", "train.min_seeds=null", "train.max_seeds=null",
             "train.compile=false")

    def finals() -> dict[int, float]:
        torch.set_num_threads(1)
        rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0, "point": "p"})
        run_quality(plan_point(composed(*short)).quality, rows, torch.device("cpu"))
        return {r["seed"]: r["value"] for r in rows.rows if r["metric"] == "val_loss" and r["mode"] == "final"}

    first, again = finals(), finals()
    assert len(first) == 2 and first == again  # exactly equal, not close
