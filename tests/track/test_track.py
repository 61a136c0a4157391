"""Tracking (+logger=mlflow, +logger=tensorboard): a finished sweep logged from its table into a local store, one run
per point with its seeds nested; a tracker that is not installed is one line before any work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.config.plan import settings_of, sweep_end
from ablations.results.identity import point_identity
from ablations.results.store import COLUMNS
from ablations.track import check_logger, log_sweep
from ablations.track.runs import flatten, measurement_metrics, seed_metrics, sweep_runs
from tests.conftest import SweepRun, shared_sweep_fixture
from tests.quality.helpers import composed

SMOKE = ["profile=smoke", "model=tiny", "threads=1", "measure=false", "train.steps=6", "train.eval_interval=3"]


def _row(**values) -> dict:
    return dict(dict.fromkeys(COLUMNS), status="ok", **values)


def test_the_plan_nests_seeds_under_their_point_and_names_each_measurement():
    rows = [
        _row(point="p1", variant="rmsnorm", metric="latency_ratio", mode="forward", batch=1, seq_len=512, value=0.9),
        _row(point="p1", variant="rmsnorm", metric="matmul_peak", mode="2048x2048@2048x2048", value=1e12),
        *[_row(point="p1", variant=v, seed=s, arm=f"a-{v}", metric="val_loss", mode="curve", step=k, value=3.0 - k)
          for v in ("rmsnorm", "gpt2") for s in (0, 1) for k in (0, 2)],
        _row(point="p1", variant="rmsnorm", seed=0, arm="a-rmsnorm", metric="loss_by_position", mode="extrapolation",
             seq_len=64, position=16, value=2.5),
        _row(point="p1", variant="rmsnorm", seed=0, arm="a-rmsnorm", metric="val_loss", mode="final", value=1.0),
    ]
    plan = sweep_runs(Path("sweep"), pd.DataFrame(rows, columns=COLUMNS), None, {}, [])
    (point,) = plan.children
    assert point.tags["blockbench.variant"] == "rmsnorm"
    assert sorted((m.key, m.value) for m in point.metrics) == [("2048x2048_2048x2048/matmul_peak", 1e12),
                                                                ("forward/latency_ratio/b1_s512", 0.9)]
    assert sorted(child.name for child in point.children) == ["gpt2 seed 0", "gpt2 seed 1", "rmsnorm seed 0",
                                                      "rmsnorm seed 1"]
    seed0 = next(child for child in point.children if child.name == "rmsnorm seed 0")
    assert sorted((m.key, m.step, m.value) for m in seed0.metrics) == [
        ("final/val_loss", 0, 1.0), ("loss_by_position/L64", 16, 2.5), ("val_loss", 0, 3.0), ("val_loss", 2, 1.0)]
    assert measurement_metrics(pd.DataFrame([_row(metric="x", mode="m", value=float("nan"))])) == []
    assert seed_metrics(pd.DataFrame([_row(metric="val_loss", mode="final", value=None)])) == []


def test_the_config_is_flattened_without_hydra_and_the_logger_is_not_part_of_a_points_identity():
    cfg = composed("+logger=mlflow")
    flat = flatten(settings_of(cfg))
    assert flat["train.steps"] == str(cfg.train.steps) and flat["logger.name"] == "mlflow"
    assert json.loads(flat["train.extrapolation"]) == list(cfg.train.extrapolation)
    assert not any(k.startswith("hydra.") for k in flat)
    assert point_identity(cfg) == point_identity(composed())


def test_a_tracker_that_is_not_installed_is_one_line_before_any_work(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    with pytest.raises(UsageError) as info:
        plan_run(["profile=smoke", "+logger=mlflow"])
    assert info.value.message == ('logger=mlflow needs the mlflow package, which is not installed here: '
                                  'pip install -e ".[track]"')
    check_logger(None)  # no logger: nothing asked


def test_each_declared_tracker_has_its_config_and_writer_and_nothing_else_does():
    import importlib

    from ablations.config.paths import conf_dir
    from ablations.config.schema import TRACKERS

    assert {p.stem for p in (conf_dir() / "logger").glob("*.yaml")} == set(TRACKERS)
    for name, tracker in TRACKERS.items():
        assert callable(importlib.import_module(tracker.module).log_config), name
    with pytest.raises(UsageError) as info:
        plan_run(["profile=smoke", "+logger=wandb"])
    assert "\n" not in info.value.message and "mlflow" in info.value.message and "tensorboard" in info.value.message


@shared_sweep_fixture("mlflow-sweep", ["-m", "variant=llama2", *SMOKE, "+logger=mlflow"], needs="mlflow")
def mlflow_sweep(run: SweepRun) -> Path:
    """One logged smoke sweep for the session (all workers: ``tests/conftest.py``); tests that log again copy it."""
    assert run.returncode == 0, run.stderr
    assert f"logged to sqlite:///{run.folder.resolve()}/mlflow.db" in run.stderr
    return run.folder


def test_mlflow_holds_one_run_per_point_with_its_seeds_nested(mlflow_sweep):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{mlflow_sweep.resolve()}/mlflow.db")
    exp = client.get_experiment_by_name("adhoc")
    runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
    table = pd.read_csv(mlflow_sweep / "results.csv")
    (point,) = set(table["point"])
    sweep = next(r for r in runs.values() if r.data.tags["blockbench.kind"] == "sweep")
    own = runs[f"llama2 ({point})"]
    seed = runs["llama2 seed 0"]
    assert own.data.tags["mlflow.parentRunId"] == sweep.info.run_id
    assert seed.data.tags["mlflow.parentRunId"] == own.info.run_id
    # The point's config, with the quality family the run's start adds (one comparison: this point's).
    assert own.data.params == flatten(settings_of(composed(*SMOKE, "variant=llama2", "+logger=mlflow",
                                                           "train.family=1")))
    # The point's own seed (its file also holds its baseline's seed 0, logged as a seed run of its own).
    assert runs["gpt2 seed 0"].data.tags["mlflow.parentRunId"] == own.info.run_id
    curve = table[(table["metric"] == "val_loss") & (table["mode"] == "curve") & (table["variant"] == "llama2")]
    history = client.get_metric_history(seed.info.run_id, "val_loss")
    expected = zip(curve["step"].astype(int), curve["value"], strict=True)
    assert sorted((m.step, m.value) for m in history) == sorted(expected)
    artifacts = {a.path for a in client.list_artifacts(sweep.info.run_id)}
    assert {"results.csv", "REPORT.md", "figures"} <= artifacts
    drawn = {f"figures/{p.name}" for p in (mlflow_sweep / "figures").glob("*.png")}
    assert drawn and {a.path for a in client.list_artifacts(sweep.info.run_id, "figures")} == drawn


def test_logging_a_folder_again_replaces_its_runs(mlflow_sweep, tmp_path):
    from mlflow.tracking import MlflowClient

    # A copy, so the shared one stays as logged; runs are a folder's by its path, so the copy is logged twice here.
    folder = Path(shutil.copytree(mlflow_sweep, tmp_path / "sweep"))
    cfg = OmegaConf.merge(composed("+logger=mlflow"), {"sweep_name": "adhoc"})
    client = MlflowClient(tracking_uri=f"sqlite:///{folder.resolve()}/mlflow.db")
    experiment = client.get_experiment_by_name("adhoc").experiment_id
    for _ in range(2):
        log_sweep(sweep_end(cfg, folder))
        runs = client.search_runs([experiment], filter_string=f"tags.`blockbench.folder` = '{folder}'")
        # The point, its own seed and its baseline's (a point run alone trains both), the sweep.
        assert sorted(r.data.tags["blockbench.kind"] for r in runs) == ["point", "seed", "seed", "sweep"]
    # The shared folder's runs, in the copied store, were left alone.
    assert len(client.search_runs([experiment], filter_string=f"tags.`blockbench.folder` = '{mlflow_sweep}'")) == 4


def test_tensorboard_writes_a_run_per_point_and_seed(mlflow_sweep, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = composed("+logger=tensorboard", f"logger.log_dir={tmp_path / 'tb'}")
    assert log_sweep(sweep_end(cfg, mlflow_sweep)) == str(tmp_path / "tb")
    (point,) = set(pd.read_csv(mlflow_sweep / "results.csv")["point"])
    seed = EventAccumulator(str(tmp_path / "tb" / point / "llama2_seed0")).Reload()
    assert [e.step for e in seed.Scalars("val_loss")] == [0, 3, 6]
    sweep = EventAccumulator(str(tmp_path / "tb" / "sweep")).Reload()
    assert "REPORT.md/text_summary" in sweep.Tags()["tensors"]
    assert sorted(sweep.Tags()["images"]) == sorted(p.stem for p in (mlflow_sweep / "figures").glob("*.png"))
