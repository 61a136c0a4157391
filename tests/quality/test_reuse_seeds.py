"""A finished run's seeds put back into a fresh sweep folder's ledger (``ablations.quality.reuse_seeds``): a rerun there
trains nothing it already has and writes the same rows, whichever kind of seed left them (an evaluation seed, a scan
seed, a compute-curve budget, a between-knot check, the learning-rate check)."""

from __future__ import annotations

import pandas as pd
import torch

import ablations.quality.arms as arms
from ablations.quality.ledger import Ledger
from ablations.quality.reuse_seeds import main as reuse_seeds
from ablations.quality.reuse_seeds import restore_seeds, seed_records
from ablations.quality.run import run_quality
from ablations.results.rows import Rows
from ablations.results.table import SEED_ROW_KEY
from ablations.runner import plan_point
from tests.quality.helpers import composed

SHORT = ("train.steps=4", "train.warmup=1", "train.eval_interval=4", "train.extrapolation=[1]", "train.compile=false",
         "train.target_mde=null", "train.min_seeds=null", "train.max_seeds=null", "train.seeds=[0,1]")
# Every kind of seed a point trains besides its evaluation seeds.
CURVE = ("train.budgets=[0.5,2]", "train.check_budgets=[1.5]", "train.lr_check=true")
SCAN = ("train.lr_scan=true", "train.lr=null", "train.lr_scan_grid=[0.25,1,4]", "train.lr_scan_extend=0",
        "train.budgets=[]")


def _point(folder, overrides: tuple[str, ...], monkeypatch=None) -> tuple[list[dict], list[tuple[int, int, float]]]:
    """One point's rows in ``folder`` and the (seed, steps, rate) of every run it trained."""
    trained: list[tuple[int, int, float]] = []
    real = arms.train

    def counted(q, corpus, tc, seed, *args, **kwargs):
        trained.append((int(seed), int(tc.steps), float(tc.lr)))
        return real(q, corpus, tc, seed, *args, **kwargs)

    if monkeypatch is not None:
        monkeypatch.setattr(arms, "train", counted)
    torch.set_num_threads(1)
    rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0, "point": "p"})
    assert run_quality(plan_point(composed(*overrides)).quality, rows, torch.device("cpu"), folder) == "ok"
    return rows.rows, trained


def _finished(folder, overrides: tuple[str, ...]) -> pd.DataFrame:
    """A finished run's table, as its results.csv holds it."""
    rows, _ = _point(folder, overrides)
    folder.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(rows)
    table.to_csv(folder / "results.csv", index=False)
    return pd.read_csv(folder / "results.csv")


def _quality(table: pd.DataFrame) -> list[tuple]:
    """Every seed's rows by what identifies them, with their values."""
    seeded = table[table["arm"].notna()]
    return sorted(seeded[[*SEED_ROW_KEY, "value"]].astype(str).itertuples(index=False, name=None))


def test_a_rerun_on_a_finished_runs_seeds_trains_nothing_and_writes_the_same_rows(tmp_path, monkeypatch):
    overrides = (*SHORT, *CURVE)
    table = _finished(tmp_path / "first", overrides)
    assert set(table["metric"]) >= {"budget_loss", "check_loss", "lr_check_loss", "val_loss"}
    assert reuse_seeds([str(tmp_path / "first"), str(tmp_path / "second")]) == 0
    again, trained = _point(tmp_path / "second", overrides, monkeypatch)
    assert trained == []
    pd.DataFrame(again).to_csv(tmp_path / "again.csv", index=False)
    assert _quality(pd.read_csv(tmp_path / "again.csv")) == _quality(table)


def test_a_scans_seeds_put_back_are_not_scanned_again(tmp_path, monkeypatch):
    overrides = (*SHORT, *SCAN)
    table = _finished(tmp_path / "first", overrides)
    assert restore_seeds(table, Ledger(tmp_path / "second")) == len(seed_records(table))
    assert restore_seeds(table, Ledger(tmp_path / "second")) == 0  # already there: nothing put twice
    again, trained = _point(tmp_path / "second", overrides, monkeypatch)
    assert trained == []
    scans = [r for r in again if r["metric"] in ("lr_scan_loss", "lr_tuned")]
    assert sorted((r["metric"], r["lr"], r.get("seed"), r["value"]) for r in scans) == sorted(
        (r["metric"], r["lr"], r.get("seed") if r.get("seed") == r.get("seed") else None, r["value"])
        for r in table.to_dict("records") if r["metric"] in ("lr_scan_loss", "lr_tuned"))


def test_a_seed_that_failed_is_not_put_back_and_one_that_diverged_is(tmp_path):
    table = pd.DataFrame([{"arm": "a", "seed": 0, "metric": "error", "mode": "quality", "status": "failed"},
                          {"arm": "c", "seed": 1, "metric": "val_loss", "mode": "final", "value": 9.0,
                           "status": "diverged"},
                          {"arm": "b", "seed": 0, "metric": "budget_loss", "mode": "budget", "value": 2.0,
                           "status": "ok", "budget": 2.0, "point": "p"}])
    records = seed_records(table)
    assert list(records) == [("c", 1), ("b", 0)]
    (row,) = records[("b", 0)]
    assert (row["metric"], row["mode"], row["value"]) == ("val_loss", "final", 2.0) and "budget" not in row


def test_reuse_seeds_says_in_one_line_when_a_folder_holds_no_seed(tmp_path, capsys):
    (tmp_path / "rows").mkdir()
    pd.DataFrame([{"metric": "val_loss", "value": 1.0, "variant": "gpt2", "sweep": "norm"}]).to_csv(
        tmp_path / "rows" / "results.csv", index=False)
    assert reuse_seeds([str(tmp_path / "rows"), str(tmp_path / "sweep")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no quality seed" in err[0]


def test_one_run_read_as_a_knot_of_two_curves_stays_in_both(tmp_path):
    """A wsd run of 3,111 steps is 2.83x one horizon's 1,100 steps and 1.41x the next's 2,200: the same arm and seed,
    read by two points at two budgets. The table keeps one copy of a seed's own rows, and both readings."""
    from ablations.results.table import collect

    seed = {"arm": "a3111", "seed": 0, "mode": "budget", "lr": 0.008, "value": 1.29, "variant": "gpt2"}
    points = tmp_path / "points"
    points.mkdir()
    for name, steps, budget in (("p1100", 1100, 2.8284271247461903), ("p2200", 2200, 1.4142135623730951)):
        own = {"arm": "b", "seed": 0, "mode": "final", "metric": "val_loss", "value": 1.5, "variant": "gpt2"}
        pd.DataFrame([{**seed, "metric": "budget_loss", "point": name, "train_steps": steps, "budget": budget},
                      {**own, "point": name}]).to_csv(points / f"{name}.csv", index=False)
    table = collect(tmp_path)
    readings = table[table["metric"] == "budget_loss"]
    assert sorted(readings["train_steps"]) == [1100, 2200]
    assert len(table[table["metric"] == "val_loss"]) == 1


def test_reuse_seeds_says_in_one_line_when_the_sweep_folder_is_a_file(tmp_path, capsys):
    (tmp_path / "rows").mkdir()
    pd.DataFrame([{"arm": "b", "seed": 0, "metric": "val_loss", "mode": "final", "value": 1.0}]).to_csv(
        tmp_path / "rows" / "results.csv", index=False)
    (tmp_path / "file").write_text("")
    assert reuse_seeds([str(tmp_path / "rows"), str(tmp_path / "file")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SWEEP_DIR is a file" in err[0]
