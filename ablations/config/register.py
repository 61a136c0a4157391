"""What every command that composes registers first: the schemas at the top of Hydra's ConfigStore, the configs
generated from the declared choices (``ablations.config.generated``), and the user's config folder on Hydra's search
path (``ablations.config.searchpath``)."""

from __future__ import annotations

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore

from ablations.config.generated import register_generated
from ablations.config.run_config import RunConfig
from ablations.config.schema import BaselineConfig, LoggerConfig, ModelSizes, ProfileConfig, TrainConfig
from ablations.config.searchpath import register_search_path
from blockbench import choices


def share_config_store() -> None:
    """Let Hydra's copies of its config repository share the one ConfigStore instead of deep-copying it.

    Hydra 1.3 deep-copies its whole repository, the ConfigStore and every node stored in it, each time it builds a
    ``CachingConfigRepository``: once per composed job, and once per config group when it writes ``--help`` (over a
    hundred groups here: most of the help's time). The copy exists so that ``initialize_sources`` cannot mutate the
    delegate's sources (hydra PR 1541); it never mutates the store, whose ``load`` already hands out a deep copy of each
    node it returns, and Hydra's later releases fetch the live singleton instead (hydra PR 2928; hydra-zen issue 769
    reports the same cost in sweeps). So a copy of the store may be the store."""
    ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]


@dataclass
class SweeperConfig:
    """``hydra/sweeper=blockbench`` (``conf/config.yaml``): every run composed once, then run
    (``ablations.sweep.run``). ``params``: a sweep's own axes, as Hydra's basic sweeper takes them."""

    _target_: str = "hydra_plugins.blockbench_sweeper.BlockbenchSweeper"
    params: dict[str, str] | None = None


def register_configs() -> None:
    """Store the schemas at the top of the ConfigStore, not in their groups: a group's schema would be listed
    (and selectable) as one of its options, e.g. ``model=model_schema`` in ``--help``. A group's config
    extends its schema with ``defaults: [/model_schema@_here_]``. Also puts the user's config folder on Hydra's
    search path (``ablations.config.searchpath``): every command that composes calls this first."""
    register_search_path()
    share_config_store()
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    groups = {"model": ModelSizes, **{choice.group: choice.config for choice in choices()}, "profile": ProfileConfig,
              "train": TrainConfig, "baseline": BaselineConfig, "logger": LoggerConfig}
    for group, node in groups.items():
        cs.store(name=f"{group}_schema", node=node)
    register_generated(cs)
    cs.store(group="hydra/sweeper", name="blockbench", node=SweeperConfig)
