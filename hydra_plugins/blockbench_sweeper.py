"""Hydra's door to blockbench's sweep: Hydra instantiates sweepers only from the ``hydra_plugins`` namespace. The
work is ``ablations.sweep.run.run_sweep``; this module imports nothing of blockbench until a sweep starts, since
Hydra imports every plugin module at its start."""

from __future__ import annotations

from typing import Any

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class BlockbenchSweeper(Sweeper):
    """Composes every point once, runs them (in process, or through ``hydra/launcher``), then writes the report."""

    def __init__(self, params: dict[str, str] | None = None) -> None:
        self.params = params  # the sweep's own axes (conf/sweep/*.yaml); read from the config in run_sweep

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config

    def sweep(self, arguments: list[str]) -> Any:
        from ablations.sweep.run import run_sweep

        return run_sweep(self.hydra_context, self.task_function, self.config, list(arguments))
