"""A sweep's job in-process: the config one point of a multirun receives, with its Hydra node, and that node made the
current job's (the ``as_job`` fixture, tests/conftest.py), as Hydra's launcher does before it calls
``ablations.cli.hydra_main``.

What a sweep in a subprocess would prove about one point (its rows, its file, its outcome) is proved here in a
second; the subprocess sweeps in the default tier are kept for what only a whole process shows.
"""

from __future__ import annotations

from pathlib import Path

from hydra.types import RunMode
from omegaconf import DictConfig, open_dict

from tests.quality.helpers import compose_smoke

# One small point (the tiny block at the smoke profile, ``compose_smoke``): one shape, one context, no quality run.
QUICK_POINT = ["train.enabled=false", "profile.shapes=[1x16]", "profile.decode_contexts=[32]"]


def job_config(folder: Path, *overrides: str, num: int = 0) -> DictConfig:
    """Job ``num``'s config with its Hydra node, as a multirun into ``folder`` under ``overrides`` receives it; the
    folder holds the report's inputs, as the sweep writes them before its first point."""
    from ablations.results.report_inputs import write_report_inputs
    from ablations.sweep.report_inputs import report_inputs

    folder.mkdir(parents=True, exist_ok=True)
    write_report_inputs(folder, report_inputs())
    cfg = compose_smoke(*QUICK_POINT, f"hydra.sweep.dir={folder}", *overrides, hydra=True)
    with open_dict(cfg):
        cfg.hydra.mode = RunMode.MULTIRUN
        cfg.hydra.job.num = num
        cfg.hydra.runtime.output_dir = str(folder / str(num))
    return cfg

