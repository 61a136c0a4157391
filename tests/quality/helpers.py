"""Composed configs for the quality tests: the smoke training profile, shortened where a test only needs rows."""

from __future__ import annotations

import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from ablations.cli import CONF_DIR
from ablations.quality.run import run_quality
from ablations.results.rows import Rows
from ablations.runner import check_point as check_run


def composed(*overrides: str) -> DictConfig:
    """The config ``python -m ablations profile=smoke model=tiny <overrides>`` would run, resolved."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=["profile=smoke", "model=tiny", "threads=1", *overrides])
    finally:
        GlobalHydra.instance().clear()
    OmegaConf.resolve(cfg)
    return cfg


def quality_rows(*overrides: str) -> tuple[str, list[dict]]:
    """Run one point's quality runs in-process; (status, rows)."""
    cfg = composed(*overrides)
    torch.set_num_threads(1)
    rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0})
    status = run_quality(cfg, check_run(cfg), rows, torch.device("cpu"))
    return status, rows.rows
