"""The Hydra schema: structured configs registered in the ConfigStore.

The choice groups reuse the dataclasses of ``components.config``, so the CLI cannot describe a model
the Python API could not. Hydra rejects unknown keys and wrong types against these before any job runs;
``ablations.checks`` adds the cross-field rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from components.config import AttnConfig, FFNConfig, ModelConfig, NormConfig, PosConfig


@dataclass
class ModelSizes(ModelConfig):
    """``ModelConfig`` plus per-size settings that only the configs need."""

    # KV heads that ``attn=gqa`` uses at this size (Llama-2-70B: 8 of 64, i.e. 8 query heads per KV head).
    gqa_kv_heads: int = 2


@dataclass
class ProfileConfig:
    """How much measuring a point does. ``smoke`` proves the path; ``default`` gives publishable numbers."""

    name: str = MISSING
    # Forward and forward+backward latency shapes, "BATCHxSEQ".
    shapes: list[str] = field(default_factory=lambda: ["1x128", "1x512", "1x1024", "4x512"])
    # Paired rounds (variant and baseline alternate, ABBA order) and the time each timer gets per round.
    rounds: int = 12
    min_run_time: float = 0.2
    warmup: int = 2
    # Decode with a KV cache: per-token time at each context and batch; prefill up to this many tokens.
    decode_contexts: list[int] = field(default_factory=lambda: [512, 1024, 2048, 4096])
    decode_batch_sizes: list[int] = field(default_factory=lambda: [1, 4])
    decode_rounds: int = 12
    prefill_max_tokens: int = 4096
    # Matrix-multiply peak for utilisation: an NxN @ NxN product in the run's dtype.
    peak_matmul_n: int = 2048
    # Which measurement families run; a sweep may turn some off.
    forward: bool = True
    train_step: bool = True
    decode: bool = True
    flops: bool = True
    memory: bool = True


class Device(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class DType(StrEnum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"  # CUDA only


@dataclass
class RunConfig:
    model: ModelSizes = field(default_factory=ModelSizes)
    pos: PosConfig = field(default_factory=PosConfig)
    norm: NormConfig = field(default_factory=NormConfig)
    ffn: FFNConfig = field(default_factory=FFNConfig)
    attn: AttnConfig = field(default_factory=AttnConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    # Name of the sweep a point belongs to ("adhoc" for a single run); set by conf/sweep/*.yaml.
    sweep_name: str = "adhoc"
    device: Device = Device.auto
    dtype: DType = DType.float32
    compile: bool = False
    # CPU threads for torch; 0 means all cores. Pinned and recorded with every row.
    threads: int = 0
    seed: int = 0
    # Where per-point files and the collected table go; empty means Hydra's sweep (or run) folder.
    out: str = ""
    # Under a parallel launcher points share the CPU, so timings lie: timing is skipped there
    # unless this is set (the rows then carry the launcher's name).
    allow_parallel_timing: bool = False


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    for group, node in (
        ("model", ModelSizes),
        ("pos", PosConfig),
        ("norm", NormConfig),
        ("ffn", FFNConfig),
        ("attn", AttnConfig),
        ("profile", ProfileConfig),
    ):
        cs.store(group=group, name=f"{group}_schema", node=node)
