"""The sweep composed once: every job's overrides expanded as Hydra's basic sweeper expands them, each job's config
composed and checked into its typed plan (``ablations.runner.plan_point``), the output folders probed, and the
family of comparisons counted, all before any point runs. The first problem is one line naming the key
(``UsageError``, exit status 2)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, open_dict

from ablations.config.checks import check_keys
from ablations.config.errors import UsageError
from ablations.config.plan import Plan, SweepEnd, sweep_end, with_family
from ablations.config.run_config import RunConfig
from ablations.config.schema import BaselineConfig, DataConfig, LoggerConfig, ModelSizes, ProfileConfig, TrainConfig
from ablations.quality import distributed
from ablations.results.durable import probe_folder
from ablations.results.sweep_record import SweepRecord
from ablations.runner import plan_point
from blockbench import choices
from components.baselines import BASELINES


@dataclass(frozen=True)
class Job:
    """One point of the sweep: its overrides, its composed config (with Hydra's node) and its checked plan."""

    overrides: tuple[str, ...]
    config: DictConfig
    plan: Plan


@dataclass(frozen=True)
class Sweep:
    """The whole run, checked: its points in launch order, where they go, and the comparisons they make."""

    name: str
    folder: Path
    jobs: tuple[Job, ...]
    family: int
    end: SweepEnd

    def __len__(self) -> int:
        return len(self.jobs)

    @property
    def record(self) -> SweepRecord:
        return SweepRecord(self.name, len(self.jobs), self.family)


def expand_jobs(loader: object, primary: DictConfig, arguments: list[str]) -> list[list[str]]:
    """Each job's overrides: the sweep's ``hydra.sweeper.params`` and the command line's, every ``a,b`` list crossed
    with the others in order (the basic sweeper's cartesian product, through Hydra's public override parser)."""
    params = [f"{k}={v}" for k, v in (primary.hydra.sweeper.get("params") or {}).items()]
    axes: dict[str, list[str]] = {}
    for override in OverridesParser.create(config_loader=loader).parse_overrides(params + arguments):
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                raise UsageError(f"{override.input_line}: a range or interval sweep; list the values (a,b,c)")
            axes[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            axes[key] = [f"{key}={override.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*axes.values())]


def with_baseline_variant(primary: DictConfig, arguments: list[str]) -> list[str]:
    """``baseline=NAME`` without a variant makes that block the point as well as its pair, so a one-choice sweep
    flips the choice on it (``+sweep=norm baseline=llama2``: Llama-2's block with each norm). Hydra cannot do this
    in the defaults list (a group chosen by interpolation may not override other groups, and variants do); a sweep
    that lists its own variants, or a variant on the command line, keeps them."""
    named = [a.split("=", 1)[1] for a in arguments if a.split("=")[0].lstrip("+") == "baseline"]
    listed = "variant" in (primary.hydra.sweeper.get("params") or {})
    if len(named) != 1 or named[0] not in BASELINES or listed or any(
            a.split("=")[0].lstrip("+~") == "variant" for a in arguments):
        return arguments
    return [*arguments, f"variant={named[0]}"]


def compose_sweep(loader: object, primary: DictConfig, arguments: list[str]) -> Sweep:
    """Every point of the run ``primary`` and its task ``arguments`` describe, composed once and checked."""
    try:
        jobs = []
        for num, overrides in enumerate(expand_jobs(loader, primary, with_baseline_variant(primary, arguments))):
            cfg = loader.load_sweep_config(primary, overrides)  # type: ignore[attr-defined]
            with open_dict(cfg):
                cfg.hydra.job.id = cfg.hydra.job.num = num
            check_keys(cfg, overrides)
            folder = Path(cfg.out) if cfg.get("out") else Path(str(cfg.hydra.sweep.dir))
            jobs.append(Job(tuple(overrides), cfg, plan_point(cfg, folder)))
    except UsageError:
        raise
    except Exception as exc:  # Hydra, OmegaConf and our ConfigError all describe the user's input
        raise UsageError(one_line(exc)) from None
    if distributed.is_writer():  # under torchrun rank 0 writes: a probe by another rank would race its first files
        check_folders(primary, jobs)
    from ablations.quality.seeds import family_of

    name = str(primary.sweep_name)
    # A comparison with its baseline (the baseline point itself is not one).
    compared = sum(job.plan.quality is not None and job.plan.pair.variant != job.plan.pair.baseline_name
                   for job in jobs)
    family = family_of(name, compared)
    jobs = [replace(job, plan=with_family(job.plan, family)) for job in jobs]
    folder = jobs[0].plan.output.folder
    return Sweep(name, folder, tuple(jobs), family, sweep_end(primary, folder))


def check_folders(primary: DictConfig, jobs: list[Job]) -> None:
    """Every folder the run writes in can be written, and none holds points of another configuration."""
    named = {str(k).split("=")[0] for k in primary.hydra.overrides.hydra}
    key = "hydra.run.dir" if "hydra.run.dir" in named and "hydra.sweep.dir" not in named else "hydra.sweep.dir"
    folders = {str(primary.hydra.sweep.dir): key}
    for job in jobs:
        if job.config.get("out"):
            folders[str(job.config.out)] = "out"
    for path, name in folders.items():
        problem = probe_folder(Path(path))
        if problem:
            raise UsageError(f"{name}={path}: {problem}")
    expected: dict[Path, set[str]] = {}
    for job in jobs:
        expected.setdefault(job.plan.output.folder, set()).add(job.plan.output.point.stem)
    for folder, stems in expected.items():
        check_foreign_points(folder, stems)


def check_foreign_points(folder: Path, expected: set[str]) -> None:
    """A sweep into a folder that holds points of another configuration would pool them into one table: refuse."""
    from ablations.results.table import POINTS_DIR

    foreign = sorted(p.name for p in (folder / POINTS_DIR).glob("*.csv") if p.stem not in expected)
    if foreign:
        raise UsageError(
            f"hydra.sweep.dir={folder}: holds {len(foreign)} point file(s) of another configuration than this "
            f"sweep's (e.g. {foreign[0]}), which its table would pool with this sweep's points; sweep into a new "
            f"folder, or move {folder / POINTS_DIR}/ aside")


_NOISE = ("object_type=", "reference_type=", "Set the environment", "provider=", "path=", "full_key:",
          "To append to your config")
_SCHEMAS = {cls.__name__: cls for cls in (RunConfig, ModelSizes, *(choice.config for choice in choices()),
                                          ProfileConfig, TrainConfig, DataConfig, BaselineConfig, LoggerConfig)}


def one_line(exc: BaseException) -> str:
    """Hydra and OmegaConf spread an error over several lines and chained causes; keep what names the
    key, what was wrong, and what is allowed."""
    parts: list[str] = []
    err: BaseException | None = exc
    for _ in range(2):  # the error and its first cause; deeper ones repeat them as templates
        if err is None:
            break
        text = str(err)
        options = re.findall(r"Available options in '([^']+)':\s*\n((?:\s+\S+\n?)+)", text)
        keep = []
        for ln in (ln.strip() for ln in text.splitlines()):
            if ln.startswith(("Config search path", "Available options")):
                break
            if not ln or "$VALUE" in ln or ln.startswith(_NOISE):
                continue
            keep.append(re.sub(r"^In '[^']+': ", "", ln))
        msg = " ".join(keep)
        for group, block in options:
            msg += f" (available options in '{group}': {', '.join(block.split())})"
        unknown = re.search(r"Key '(\w+)' not in '(\w+)'", msg)
        if unknown and unknown.group(2) in _SCHEMAS and "(allowed keys:" not in msg:
            msg += f" (allowed keys: {', '.join(f.name for f in fields(_SCHEMAS[unknown.group(2)]))})"
        if msg and msg not in parts:
            parts.append(msg.rstrip("."))
        err = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
    return "; ".join(parts)
