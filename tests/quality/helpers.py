"""Composed configs for the quality tests: the smoke training profile, shortened where a test only needs rows."""

from __future__ import annotations

import copy
import functools

import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from ablations.cli import CONF_DIR
from ablations.quality.run import run_quality
from ablations.results.rows import Rows
from ablations.runner import plan_point


def composed(*overrides: str) -> DictConfig:
    """The config ``python -m ablations profile=smoke model=tiny <overrides>`` would run, resolved: a copy of its one
    composition per process (half the suite's calls repeat an earlier one, at 0.1-0.3 s of Hydra each). The tests
    that compose under a changed config folder or plugins compose for themselves."""
    return copy.deepcopy(_composed(overrides))


@functools.cache
def _composed(overrides: tuple[str, ...]) -> DictConfig:
    cfg = compose_smoke(*overrides)
    OmegaConf.resolve(cfg)
    return cfg


def compose_smoke(*overrides: str, hydra: bool = False) -> DictConfig:
    """``profile=smoke model=tiny threads=1 <overrides>`` composed afresh, with Hydra's own node when ``hydra``."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose("config", return_hydra_config=hydra,
                           overrides=["profile=smoke", "model=tiny", "threads=1", *overrides])
    finally:
        GlobalHydra.instance().clear()


def quality_rows(*overrides: str, baseline: bool = False) -> tuple[str, list[dict]]:
    """Run one point's quality runs in-process; (status, rows): the point's own arm's rows (variant ``v``), and with
    ``baseline`` also those of the baseline's seeds the point trains beside them."""
    cfg = composed(*overrides)
    torch.set_num_threads(1)
    rows = Rows(base={"sweep": "test", "variant": "v", "seed": 0})
    status = run_quality(plan_point(cfg).quality, rows, torch.device("cpu"))
    return status, [r for r in rows.rows if baseline or r["variant"] == "v"]
