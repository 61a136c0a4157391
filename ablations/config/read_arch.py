"""A composed run config read into ``components``' dataclasses: the model it describes (``arch_from``) and the
baseline it names (``baseline_from``), at the point's sizes."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from blockbench import choices
from components import ArchConfig, ModelConfig
from components.baselines import baseline_of
from components.matched_params import match_params


def arch_from(cfg: DictConfig) -> ArchConfig:
    """The components' ``ArchConfig`` described by a composed run config: the sizes and every declared choice."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    model.pop("gqa_kv_heads", None)
    groups = {choice.group: choice.config(**OmegaConf.to_container(cfg[choice.group], resolve=True))
              for choice in choices()}
    arch = ArchConfig(model=ModelConfig(**model), **groups)
    return match_params(arch) if cfg.get("match_params") else arch


def baseline_from(cfg: DictConfig, arch: ArchConfig) -> ArchConfig:
    """The baseline a composed run config names (``baseline=gpt2|llama2``), at the point's sizes."""
    return baseline_of(arch, str(cfg.baseline.name), int(cfg.model.gqa_kv_heads))
