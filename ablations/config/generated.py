"""The Hydra configs derived from the declared choices, stored in the ConfigStore beside ``conf/``'s files.

- ``choices``: the defaults list that puts every choice group in the primary config at GPT-2's value, so
  ``norm=rmsnorm`` overrides it and a new group is selectable without editing ``conf/config.yaml``;
- ``variant/*``: GPT-2 (``gpt2``), each value flipped alone on it (``rmsnorm``, ``gqa``, ``nobias``, ``none``,
  ...), Llama-2's block (``llama2``: every choice Llama-2 moved, untied embeddings), each of those reverted alone
  (``llama2_gelu``, ``llama2_bias``, ...), Llama-2's block with tied embeddings (``llama2_tied``) and the ladder's
  cumulative rungs (``rope_rmsnorm``, ...);
- ``sweep/*``: one sweep per choice over its values (``+sweep=norm``; a choice may opt out, as attention's
  ``kv`` sweep over KV heads is a file), ``all``, ``ladder`` and ``leave_one_out``;
- ``hydra/help/blockbench``: ``--help``, with every sweep listed;
- ``<group>/<value>``: each value without a file in ``conf/<group>/`` (a plugin's: ``components.plugins``), its
  config dataclass at that value with every other setting at its default.

Hand-written configs stay files in ``conf/`` (sizes, profiles, the ``kv``, ``scale`` and ``gqa_matched`` sweeps,
``gqa_matched``'s variant); a generated name that a file also has is an error at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from ablations.config.corpora import CORPORA
from ablations.config.paths import conf_dir
from ablations.config.variants import BASELINES
from blockbench import Choice, choices, ladder_choices, llama2_choices
from components import LLAMA2_TIES_EMBEDDINGS, ModelConfig, embeddings_text, llama2_values

BASELINE = "gpt2"
LLAMA2 = "llama2"
TIED = "llama2_tied"


@dataclass(frozen=True)
class Variant:
    """A named point: group overrides on the GPT-2 baseline plus plain settings."""

    name: str
    values: dict[str, str]
    settings: dict[str, Any] = field(default_factory=dict)
    what: str = ""

    def node(self) -> dict[str, Any]:
        defaults = [{f"override /{group}": value} for group, value in self.values.items()]
        return {"defaults": defaults, **self.settings} if defaults else dict(self.settings)


def flip_name(c: Choice, value: str) -> str:
    return c.value_name(value)


def flips() -> list[Variant]:
    """Every value other than GPT-2's, alone on the GPT-2 block, named as its choice names it."""
    return [Variant(flip_name(c, v), {c.group: v}, what=f"the GPT-2 block with {c.group}={v}")
            for c in choices() for v in c.values if v != c.gpt2]


def llama2_variant(revert: Choice | None = None, tied: bool = False) -> Variant:
    values = {g: v for g, v in llama2_values().items() if revert is None or g != revert.group}
    # Llama-2's embeddings (``components.presets.LLAMA2_TIES_EMBEDDINGS``), set beside its choices; tied: GPT-2's.
    settings = {} if tied else {"model": {"tie_embeddings": LLAMA2_TIES_EMBEDDINGS}}
    if revert is not None:
        return Variant(f"{LLAMA2}_{flip_name(revert, revert.gpt2)}", values, settings,
                       f"the Llama-2 block with {revert.group} reverted to GPT-2's {revert.gpt2}")
    if tied:
        return Variant(TIED, values, settings,
                       f"the Llama-2 block with GPT-2's {embeddings_text(ModelConfig.tie_embeddings)}")
    return Variant(LLAMA2, values, settings,
                   f"Llama-2's block: every choice Llama-2 moved, {embeddings_text(LLAMA2_TIES_EMBEDDINGS)}")


def leave_one_out() -> list[Variant]:
    return [llama2_variant(), *(llama2_variant(revert=c) for c in llama2_choices()), llama2_variant(tied=True)]


def ladder() -> list[Variant]:
    """GPT-2, then the Llama-2 choices added one at a time in ``rung`` order, then Llama-2's block (whose last step
    also unties the embeddings). A rung is named by its choices in declaration order: ``rope_rmsnorm``."""
    rungs = ladder_choices()
    out = [Variant(BASELINE, {}, what="the GPT-2 block: every choice at GPT-2's value")]
    for k in range(1, len(rungs)):
        added = sorted(rungs[:k], key=lambda c: c.order)
        out.append(Variant("_".join(flip_name(c, c.llama2) for c in added), {c.group: c.llama2 for c in added},
                           what="the ladder's rung with " + ", ".join(f"{c.group}={c.llama2}" for c in added)))
    return [*out, llama2_variant()]


def modern() -> list[Variant]:
    """Llama-2's block, then each choice that came after it alone on it: every flip that is neither GPT-2's nor
    Llama-2's value (``Choice.after_llama2``), and every named setting flip (``Choice.setting_flips``)."""
    base = llama2_variant()
    out = [base]
    for c in choices():
        for v in c.after_llama2:
            out.append(Variant(f"{LLAMA2}_{flip_name(c, v)}", {**base.values, c.group: v}, base.settings,
                               f"the Llama-2 block with {c.group}={v}"))
        for name, settings in c.setting_flips.items():
            said = ", ".join(f"{c.group}.{k}={v}" for k, v in settings.items())
            out.append(Variant(f"{LLAMA2}_{name}", base.values, {**base.settings, c.group: dict(settings)},
                               f"the Llama-2 block with {said}"))
    return out


def all_variants() -> list[Variant]:
    """Every generated variant once (the ladder's first rung is also a flip)."""
    seen: dict[str, Variant] = {}
    for v in [*ladder(), *flips(), *leave_one_out(), *modern()]:
        seen.setdefault(v.name, v)
    return list(seen.values())


def all_sweep() -> list[str]:
    """The GPT-2 baseline, each Llama-2 choice flipped alone (in ladder order), and Llama-2's block."""
    return [BASELINE, *(flip_name(c, c.llama2) for c in ladder_choices()), LLAMA2]


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
    one_choice = [Sweep(c.group, {c.group: ",".join(c.values)},
                        " vs ".join(c.values) + " on the GPT-2 block") for c in choices() if c.sweep]
    quality_only = {"measure": False, **all_settings()}
    return [
        *one_choice,
        Sweep("all", {"variant": ",".join(all_sweep())},
              f"the GPT-2 baseline, each of the {len(llama2_choices())} flips, and the full Llama-2 block",
              all_settings()),
        Sweep("ladder", {"variant": ",".join(v.name for v in ladder())},
              "cumulative GPT-2 -> Llama-2, one choice at a time; quality only", quality_only),
        Sweep("leave_one_out", {"variant": ",".join(v.name for v in leave_one_out()), "baseline": LLAMA2},
              "the Llama-2 block with one choice reverted to GPT-2's; quality only", quality_only),
        Sweep("modern", {"variant": ",".join(v.name for v in modern()), "baseline": LLAMA2},
              "the Llama-2 block against each choice that came after it, flipped alone on it", MODERN_SETTINGS),
        transfer_sweep(),
        horizon_sweep(),
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


HELP_HEADER = """blockbench run (python -m ablations)
What each GPT-2 -> Llama-2 block design choice buys: every variant timed paired against the GPT-2 block
(latency, memory, FLOPs, decode), and a small byte-level LM trained per seed for the loss.
"""
HELP_FOOTER = """Bad input stops before any work with one line and exit status 2; a point that fails is recorded and the
sweep goes on (exit status 1); a fault of the disk or the corpus during the run stops it with one line
(exit status 1), and a rerun into the same folder (hydra.sweep.dir=DIR) skips the points already written.
More in README.md; Hydra's own flags: --hydra-help.
"""


def value_marks(c: Choice) -> dict[str, str]:
    """Which model takes which value, as ``--help`` and the docs' choice tables mark it."""
    if not c.in_llama2:
        return {c.gpt2: "GPT-2, the baseline; neither model varies it"}
    return {c.gpt2: "GPT-2", c.llama2: "Llama-2"}


def _values_text(c: Choice) -> str:
    marks = value_marks(c)
    return ", ".join(f"{v} ({marks[v]})" if v in marks else v for v in c.values)


def help_node() -> dict[str, Any]:
    lines = sweep_lines()
    width = max(map(len, lines)) + 2
    sweeps_text = "\n".join(f"  {name:<{width}} {what}" for name, what in lines.items())
    choice_text = "\n".join(f"  {c.group:<{width}} {_values_text(c)}" for c in choices())
    template = (
        "${hydra.help.header}\n"
        "Usage: blockbench run [+sweep=NAME] [GROUP=OPTION ...] [KEY=VALUE ...] [hydra.sweep.dir=DIR]\n"
        "       blockbench run -m GROUP=A,B KEY=X,Y ...     (any grid, Hydra's own syntax)\n\n"
        "== Sweeps (+sweep=NAME; each runs all its points, no -m needed) ==\n"
        f"{sweeps_text}\n\n"
        "== Design choices (each a group: GROUP=OPTION) ==\n"
        f"{choice_text}\n\n"
        "== Configuration groups (GROUP=OPTION) ==\n"
        "$APP_CONFIG_GROUPS\n"
        "== Config (override any key: KEY=VALUE; profile=smoke runs the whole path in seconds) ==\n"
        "$CONFIG\n"
        "${hydra.help.footer}"
    )
    return {"app_name": "blockbench", "header": HELP_HEADER, "footer": HELP_FOOTER, "template": template}


def _check_no_file(group: str, name: str) -> None:
    if (conf_dir() / group / f"{name}.yaml").exists():
        raise RuntimeError(f"conf/{group}/{name}.yaml duplicates the generated {group} {name!r}: delete the file")


def register_generated(cs: ConfigStore) -> None:
    cs.store(name="choices", node={"defaults": [{f"/{c.group}": c.gpt2} for c in choices()]})
    for c in choices():
        for value in c.values:
            if not (conf_dir() / c.group / f"{value}.yaml").exists():
                cs.store(group=c.group, name=value, node=c.at(value))
    for v in all_variants():
        _check_no_file("variant", v.name)
        cs.store(group="variant", name=v.name, node=v.node(), package="_global_")
    for name in BASELINES:
        _check_no_file("baseline", name)
        cs.store(group="baseline", name=name, node={"defaults": ["/baseline_schema@_here_"], "name": name})
    for s in sweeps():
        _check_no_file("sweep", s.name)
        cs.store(group="sweep", name=s.name, node=s.node(), package="_global_")
    cs.store(group="hydra/help", name="blockbench", node=help_node(), package="hydra.help")
