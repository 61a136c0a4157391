"""The sweep, start to end: compose every point once (``compose``), write what the sweep knows as a whole beside its
points, run each point in this process or hand the points to Hydra's launcher (joblib, submitit), then write the
table and REPORT.md from the rows (``end``).

Hydra calls ``run_sweep`` from its sweeper (``hydra_plugins.blockbench_sweeper``), after composing the run's primary
config; every run is a sweep, a single point one of one (``conf/config.yaml``: ``hydra.mode: MULTIRUN``)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus, filter_overrides, run_job
from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf

from ablations.quality import distributed
from ablations.results.durable import make_folder
from ablations.results.report_inputs import write_report_inputs
from ablations.results.sweep_record import write_sweep_record
from ablations.runner import launcher_name
from ablations.sweep.compose import Sweep, compose_sweep
from ablations.sweep.end import finish
from ablations.sweep.report_inputs import report_inputs

log = logging.getLogger("ablations")


def run_sweep(hydra_context: HydraContext, task_function: Callable[[DictConfig], Any], primary: DictConfig,
              arguments: list[str]) -> list[JobReturn]:
    """Every point of the run: checked before the first runs, then run, then the sweep's end."""
    sweep = compose_sweep(hydra_context.config_loader, primary, arguments)
    if distributed.is_writer():
        make_folder(sweep.folder)
        OmegaConf.save(primary, sweep.folder / "multirun.yaml")
        write_sweep_record(sweep.folder, sweep.record)
        write_report_inputs(sweep.folder, report_inputs())
    if launcher_name(primary) == "basic":
        returns = run_in_process(sweep, hydra_context)
    else:
        runner = Plugins.instance().instantiate_launcher(hydra_context=hydra_context, task_function=task_function,
                                                         config=primary)
        returns = list(runner.launch([list(job.overrides) for job in sweep.jobs], initial_job_idx=0))
    finish(sweep.end, [status_of(r) for r in returns])
    return returns


def run_in_process(sweep: Sweep, hydra_context: HydraContext) -> list[JobReturn]:
    """Each point from its plan, one after another, in Hydra's job folder (``.hydra/`` records, the job's log); the
    config is not composed again. Progress with an ETA across points."""
    from tqdm.auto import tqdm

    from ablations.runner import run_point

    bar = tqdm(total=len(sweep), desc=f"sweep {sweep.name}", unit="point", disable=not sys.stderr.isatty())
    started, returns = time.monotonic(), []
    for job in sweep.jobs:
        log.debug("#%d : %s", job.config.hydra.job.num, " ".join(filter_overrides(job.overrides)))
        ret = run_job(hydra_context=hydra_context, task_function=lambda _cfg, job=job: run_point(job.plan),
                      config=job.config, job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
        returns.append(ret)
        status = status_of(ret)
        if ret.status != JobStatus.COMPLETED:  # an exception escaped the point (it should not): say which
            try:
                ret.return_value  # noqa: B018 (Hydra raises the job's exception here)
            except Exception as exc:
                log.error("point %s raised %s: %s", job.plan.pair.variant, type(exc).__name__, exc)
        bar.update(1)
        bar.set_postfix_str(f"{sweep.name}: last {status}")
        if not sys.stderr.isatty():
            done, elapsed = len(returns), time.monotonic() - started
            eta = elapsed / done * (len(sweep) - done)
            log.info("point %d/%d %s (%.0f s elapsed, ETA %.0f s)", done, len(sweep), status, elapsed, eta)
    bar.close()
    return returns


def status_of(ret: JobReturn) -> str:
    """``ok``, ``failed`` or ``skipped`` (measured before); a job whose point raised counts as failed."""
    return str(ret.return_value) if ret.status == JobStatus.COMPLETED else "failed"
