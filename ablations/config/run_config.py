"""The primary config's schema: ``RunSettings``, every setting of a run that is not a design choice, and
``RunConfig``, which adds one field per declared choice (``components.choice``), generated, so the CLI cannot describe a
model the Python API could not and a new group needs no edit here. Hydra rejects unknown keys and wrong types against
it before any job runs, except keys added with ``+`` (``checks.check_keys`` rejects those); ``ablations.config.checks``
adds the cross-field rules.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from enum import StrEnum

from ablations.config.schema import BaselineConfig, DataConfig, LoggerConfig, ModelSizes, ProfileConfig, TrainConfig
from blockbench import choices


class Device(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class DType(StrEnum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"  # CUDA only


@dataclass
class RunSettings:
    """Everything of a run that is not a design choice; ``RunConfig`` adds one field per declared choice."""

    model: ModelSizes = field(default_factory=ModelSizes)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    baseline: BaselineConfig = field(default_factory=BaselineConfig)
    data: DataConfig = field(default_factory=DataConfig)
    # Set by +logger=mlflow or +logger=tensorboard (conf/logger); null: the results folder only.
    logger: LoggerConfig | None = None
    # false: skip the latency/FLOPs/memory measurement and run only the quality runs (train.enabled).
    measure: bool = True
    # Like for like: change the FFN's width by the weights the attention saves against MHA (GQA/MQA's K/V heads,
    # MLA's latent), so the block keeps its MHA version's parameter count (Llama-2's GQA ablation did this for GQA).
    # Computed per model size.
    match_params: bool = False
    # Name of the sweep a point belongs to ("adhoc" for a single run); set by each sweep (+sweep=NAME).
    sweep_name: str = "adhoc"
    device: Device = Device.auto
    dtype: DType = DType.float32
    compile: bool = False
    # CPU threads for torch; 0 means all cores. Pinned and recorded with every row.
    threads: int = 0
    seed: int = 0
    # Where per-point files and the collected table go; empty means Hydra's sweep (or run) folder.
    out: str = ""
    # false: REPORT.md without its figures, seconds sooner (a CI check reads the table); `blockbench report FOLDER`
    # draws them later from the same table.
    figures: bool = True
    # Under a parallel launcher points share the CPU, so timings lie: timing is skipped there
    # unless this is set (the rows then carry the launcher's name).
    allow_parallel_timing: bool = False


def _run_config() -> type:
    """``RunSettings`` with the choice groups after ``model``, in declaration order (as ``--cfg job`` prints them)."""
    hints = typing.get_type_hints(RunSettings)
    specs = []
    for f in dataclasses.fields(RunSettings):
        default = {"default_factory": f.default_factory} if f.default is dataclasses.MISSING else {"default": f.default}
        specs.append((f.name, hints[f.name], field(**default)))
        if f.name == "model":
            specs += [(choice.group, choice.config, field(default_factory=choice.config)) for choice in choices()]
    cls = dataclasses.make_dataclass("RunConfig", specs)
    cls.__module__ = __name__
    return cls


RunConfig = _run_config()
