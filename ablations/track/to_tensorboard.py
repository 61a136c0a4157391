"""The runs (``ablations.track.runs``) as TensorBoard event files: ``<log_dir>/<point>/`` holds a point's
measurement scalars and its config (text), ``<log_dir>/<point>/<variant>_seed<N>/`` each seed's curves, so
TensorBoard's run selector lists the seeds under their point; ``<log_dir>/sweep/`` holds the report (text) and the
figures (images). Logging a folder again replaces the runs it wrote before.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ablations.config.schema import LoggerConfig
from ablations.track.runs import Run

SWEEP_DIR = "sweep"


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _config_text(params: dict[str, str]) -> str:
    return "\n".join(f"    {k} = {v}" for k, v in sorted(params.items()))


def log_config(sweep_run: Run, folder: Path, logger: LoggerConfig, sweep_name: str) -> str:
    """``+logger=tensorboard``: write ``sweep_run`` under ``logger.log_dir``; returns that folder."""
    return str(log(sweep_run, folder, str(logger.log_dir)))


def log(sweep_run: Run, folder: Path, log_dir: str) -> Path:
    """Write ``sweep_run`` under ``log_dir`` (empty: ``<folder>/tensorboard``); returns that folder."""
    from torch.utils.tensorboard import SummaryWriter

    root = Path(log_dir) if log_dir else folder / "tensorboard"
    runs = [(root / SWEEP_DIR, sweep_run)]
    for point in sweep_run.children:
        where = root / _safe(point.tags.get("blockbench.point", point.name))
        runs.append((where, point))
        runs += [(where / _safe(seed.name.replace(" seed ", "_seed")), seed) for seed in point.children]
    for where, _ in runs:
        if where.exists():
            shutil.rmtree(where)
    for where, run in runs:
        with SummaryWriter(log_dir=str(where)) as writer:
            if run.params:
                writer.add_text("config", _config_text(run.params))
            for m in run.metrics:
                writer.add_scalar(m.key, m.value, m.step)
            for path in run.artifacts:
                if path.suffix == ".md":
                    writer.add_text(path.name, path.read_text())
                elif path.suffix == ".png":
                    import matplotlib.image

                    writer.add_image(path.stem, matplotlib.image.imread(path)[..., :3], dataformats="HWC")
    return root
