"""The runs (``ablations.track.runs``) into MLflow: an experiment per sweep name, the sweep's run with its point runs
nested under it and each point's seed runs under the point (``mlflow.parentRunId``), so ``mlflow ui`` lists a sweep
as one row that opens into its points, each opening into its seeds.

Seeds are nested runs rather than tags on the point's run: each seed's curves then keep their own metric history
(step by step, the same names in every seed), which MLflow's charts overlay and compare; as tags on one run they
would need a metric name per seed. Logging a folder again replaces its earlier runs (found by the
``blockbench.folder`` tag), so a resumed sweep is logged once.
"""

from __future__ import annotations

import time
from pathlib import Path

from ablations.config.schema import LoggerConfig
from ablations.track.runs import Run

PARENT = "mlflow.parentRunId"
# MLflow's log_batch limits per call.
MAX_METRICS, MAX_PARAMS = 1000, 100


def default_uri(folder: Path) -> str:
    return f"sqlite:///{(folder / 'mlflow.db').resolve()}"


def log_config(sweep_run: Run, folder: Path, logger: LoggerConfig, sweep_name: str) -> str:
    """``+logger=mlflow``: log ``sweep_run`` to ``logger.tracking_uri`` (empty: a SQLite store in the sweep folder),
    experiment ``logger.experiment`` (empty: the sweep's name); returns the store's URI."""
    uri = str(logger.tracking_uri) or default_uri(folder)
    log(sweep_run, folder, uri, str(logger.experiment or sweep_name))
    return uri


def log(sweep_run: Run, folder: Path, tracking_uri: str, experiment: str) -> str:
    """Log ``sweep_run``; returns the sweep run's id."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)  # the caller resolves the default (log_config)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        # Artifacts beside the store in the sweep folder (MLflow's default would be ./mlruns under the cwd).
        exp_id = client.create_experiment(experiment, artifact_location=(folder / "mlartifacts").resolve().as_uri())
    else:
        exp_id = found.experiment_id
    key = sweep_run.tags["blockbench.folder"].replace("'", "\\'")
    for old in client.search_runs([exp_id], filter_string=f"tags.`blockbench.folder` = '{key}'"):
        client.delete_run(old.info.run_id)
    now = int(time.time() * 1000)

    def write(run: Run, parent: str | None) -> str:
        origin = sweep_run.tags["blockbench.folder"]
        tags = {**run.tags, "blockbench.folder": origin, **({PARENT: parent} if parent else {})}
        run_id = client.create_run(exp_id, run_name=run.name, tags=tags).info.run_id
        params = [Param(k[:250], v[:6000]) for k, v in run.params.items()]
        for i in range(0, len(params), MAX_PARAMS):
            client.log_batch(run_id, params=params[i:i + MAX_PARAMS])
        metrics = [Metric(m.key, m.value, now, m.step) for m in run.metrics]
        for i in range(0, len(metrics), MAX_METRICS):
            client.log_batch(run_id, metrics=metrics[i:i + MAX_METRICS])
        for path in run.artifacts:
            client.log_artifact(run_id, str(path), artifact_path=path.parent.name if path.parent != folder else None)
        for child in run.children:
            write(child, run_id)
        client.set_terminated(run_id)
        return run_id

    return write(sweep_run, None)
