"""The sweeps generated from the declared choices, each stored as ``sweep/<name>`` (``ablations.config.generated``).

One sweep per choice over its values (``+sweep=norm``; a choice may opt out, as attention's ``kv`` sweep over KV heads
is a file), ``all``, ``ladder``, ``leave_one_out``, ``modern``, ``transfer`` and ``horizon``, with the settings each
runs under; and every sweep's one line, generated or a file, as ``--help`` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from ablations.config.generated_variants import BASELINE, LLAMA2, TIED, UNTIED, flip_name, ladder, leave_one_out, modern
from ablations.config.paths import conf_dir
from ablations.config.schema import CORPORA
from blockbench import choices, ladder_choices, llama2_choices


def all_sweep() -> list[str]:
    """The GPT-2 baseline, each Llama-2 choice flipped alone (in ladder order), Llama-2's embeddings alone, Llama-2's
    block with GPT-2's embeddings (its five choices alone), and Llama-2's block (six changes: the five and the
    embeddings)."""
    return [BASELINE, *(flip_name(choice, choice.llama2) for choice in ladder_choices()), UNTIED, TIED, LLAMA2]


# What +sweep=modern measures per point: less than the default sweeps, so that its seven points fit in about half an
# hour on 2 cores. The kv sweep's decode contexts at batch 1, one forward/train shape, the default rounds, and quality
# seeds of 150 steps: the default 250 steps would take it past the half hour. docs/run_times.md has its measured times.
MODERN_SETTINGS: dict[str, Any] = {"profile": {"shapes": ["1x512"], "decode_batch_sizes": [1]},
                                   "train": {"steps": 150}}


# +sweep=all answers its six comparisons at 0.04 nats/byte (the size of the published effects' upper end) rather
# than the default 0.02: at the measured spread of paired differences 0.02 would take all 8 seeds of all 7 arms.
# The other sweeps of several flips (ladder, leave_one_out) answer at the same target, for the same reason.
ALL_TARGET_MDE = 0.04


def all_settings() -> dict[str, Any]:
    """The target of the sweeps of several flips (``all``, ``ladder``, ``leave_one_out``), with the default seed
    bounds (conf/train/default.yaml) so that each is sequential under every training profile, the smoke one included."""
    default = OmegaConf.load(conf_dir() / "train" / "default.yaml")
    return {"train": {"target_mde": ALL_TARGET_MDE, "min_seeds": default.min_seeds, "max_seeds": default.max_seeds}}


# +sweep=transfer (ablations.quality.transfer): the all sweep's points at every rung (conf/train/rung_*.yaml, smallest
# first) on every text (data.corpus), quality only at the training length. Fixed seeds keep its run time known in
# advance; the baseline's budget curve (train.budgets, on the same seeds) gives each cell its multiplier.
TRANSFER_TRAIN: dict[str, Any] = {"target_mde": None, "min_seeds": None, "max_seeds": None, "seeds": [0, 1, 2],
                                  "extrapolation": [1]}


def transfer_rungs() -> list[str]:
    """The transfer sweep's rungs: the train options ``rung_*``, smallest training compute first."""
    def size(path: Path) -> int:
        t = OmegaConf.load(path)
        return int(t.d_model) ** 2 * int(t.steps)
    return [p.stem for p in sorted((conf_dir() / "train").glob("rung_*.yaml"), key=size)]


def transfer_sweep() -> Sweep:
    texts = list(CORPORA)
    return Sweep("transfer", {"variant": ",".join(all_sweep()), "train": ",".join(transfer_rungs()),
                              "data.corpus": ",".join(texts)},
                 f"the all sweep's points at {len(transfer_rungs())} rungs on {len(texts)} texts; quality only",
                 {"measure": False, "train": dict(TRANSFER_TRAIN)})


# +sweep=horizon (ablations.quality.horizon): the all sweep's points at one width trained for several horizons
# (conf/train/horizon_*.yaml, shortest first), each its own family with its own budget curve (the default's knots,
# half a doubling apart). The baseline is also trained between the knots on the same seeds (a quarter doubling past
# 1x and past 2x): known answers the curve must interpolate.
HORIZON_TRAIN: dict[str, Any] = {**TRANSFER_TRAIN, "check_budgets": [2**0.25, 2**1.25]}


def horizons() -> list[str]:
    """The horizon sweep's train options ``horizon_*``, fewest steps first."""
    return [p.stem for p in sorted((conf_dir() / "train").glob("horizon_*.yaml"),
                                   key=lambda path: int(OmegaConf.load(path).steps))]


# +sweep=lr_scan (ablations.quality.lr_scan): the all sweep's points, each arm's rate scanned on the scan seeds and
# then judged at it on the evaluation seeds, with the baseline's curve at its own rate (checked at the curve's ends):
# the compute multipliers and verdicts at each arm's own best rate. Quality only. Its chosen rates are committed as
# train.tuned_lr (python -m ablations.report.tuned_rates prints them from the run's table).
def lr_scan_sweep() -> Sweep:
    return Sweep("lr_scan", {"variant": ",".join(all_sweep())},
                 "the all sweep's points, each arm at its own best learning rate (scanned, then judged on fresh "
                 "seeds); quality only", {"measure": False, "train": {**all_settings()["train"], "lr_scan": True}})


def horizon_sweep() -> Sweep:
    return Sweep("horizon", {"variant": ",".join(all_sweep()), "train": ",".join(horizons())},
                 f"the all sweep's points trained for {len(horizons())} horizons at one width; quality only",
                 {"measure": False, "train": dict(HORIZON_TRAIN)})


@dataclass(frozen=True)
class Sweep:
    name: str
    params: dict[str, str]
    what: str
    settings: dict[str, Any] = field(default_factory=dict)

    def node(self) -> dict[str, Any]:
        return {"sweep_name": self.name, **self.settings,
                "hydra": {"mode": "MULTIRUN", "sweeper": {"params": dict(self.params)}}}


def sweeps() -> list[Sweep]:
    one_choice = [Sweep(choice.group, {choice.group: ",".join(choice.values)},
                        " vs ".join(choice.values) + " on the GPT-2 block") for choice in choices() if choice.sweep]
    quality_only = {"measure": False, **all_settings()}
    return [
        *one_choice,
        Sweep("all", {"variant": ",".join(all_sweep())},
              f"the GPT-2 baseline, each of the {len(llama2_choices())} flips, Llama-2's embeddings alone, and "
              "Llama-2's block with GPT-2's embeddings and with its own",
              all_settings()),
        Sweep("ladder", {"variant": ",".join(v.name for v in ladder())},
              "cumulative GPT-2 -> Llama-2, one choice at a time; quality only", quality_only),
        Sweep("leave_one_out", {"variant": ",".join(v.name for v in leave_one_out()), "baseline": LLAMA2},
              "the Llama-2 block with one choice reverted to GPT-2's; quality only", quality_only),
        Sweep("modern", {"variant": ",".join(v.name for v in modern()), "baseline": LLAMA2},
              "the Llama-2 block against each choice that came after it, flipped alone on it", MODERN_SETTINGS),
        transfer_sweep(),
        horizon_sweep(),
        lr_scan_sweep(),
    ]


def file_sweeps() -> dict[str, str]:
    """The sweeps written as files, each with its ``# help:`` line as what it runs (a test checks each has one)."""
    out = {}
    for path in sorted((conf_dir() / "sweep").glob("*.yaml")):
        lines = [ln for ln in path.read_text().splitlines() if ln.startswith("# help:")]
        out[path.stem] = lines[0].removeprefix("# help:").strip() if lines else ""
    return out


def sweep_lines() -> dict[str, str]:
    """Every sweep, generated or a file, with a line saying what it runs."""
    return {**{s.name: s.what for s in sweeps()}, **file_sweeps()}
