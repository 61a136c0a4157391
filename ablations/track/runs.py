"""What a finished sweep logs, read from its results table: the same runs for every tracker.

The sweep's run carries its config, ``REPORT.md``, the figures and ``results.csv``; under it one run per point
(its flattened config as parameters, its measurement rows as metrics: timings, ratios, FLOPs, memory) and under
each point one run per (variant, seed) of its quality rows (every curve with its step, the final losses, the
extrapolation). A point's file holds the baseline's seeds its comparison used, so its seed runs do too: each point
run is its comparison's whole evidence, as its point file is.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ablations.results.durable import make_folder, write_atomic

CONFIGS_DIR = "configs"
# Characters every tracker accepts in a metric name (MLflow's rule, the strictest); others become "_".
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


@dataclass
class Metric:
    key: str
    value: float
    step: int = 0


@dataclass
class Run:
    name: str
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list)
    artifacts: list[Path] = field(default_factory=list)
    children: list[Run] = field(default_factory=list)


def flatten(settings: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """A run's settings (``ablations.config.plan.settings_of``) as ``{"train.lr": "0.002", ...}``; lists stay one
    value."""
    out: dict[str, str] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value) if isinstance(value, list) else str(value)
    return out


def save_point_config(folder: Path, stem: str, settings: dict[str, Any]) -> None:
    """The point's flattened settings beside its rows (``configs/<point>.json``), for its run's parameters."""
    make_folder(folder / CONFIGS_DIR)
    text = json.dumps(flatten(settings), indent=1, sort_keys=True)
    write_atomic(folder / CONFIGS_DIR / f"{stem}.json", lambda f: f.write(text.encode()))


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _key(*parts: Any) -> str:
    return "/".join(_UNSAFE.sub("_", str(p)) for p in parts if p is not None and str(p) != "")


def _shape(row: pd.Series) -> str | None:
    batch, seq = _number(row.get("batch")), _number(row.get("seq_len"))
    if batch is not None and seq is not None:
        return f"b{int(batch)}_s{int(seq)}"
    return f"s{int(seq)}" if seq is not None else None


def measurement_metrics(rows: pd.DataFrame) -> list[Metric]:
    """A point's own measurement rows (no ``arm``): ``mode/metric/b<batch>_s<seq>``, at step 0."""
    out = []
    for _, r in rows.iterrows():
        value = _number(r["value"])
        if value is not None:
            out.append(Metric(_key(r["mode"], r["metric"], _shape(r)), value))
    return out


def seed_metrics(rows: pd.DataFrame) -> list[Metric]:
    """One seed's quality rows: curves by their ``step``, loss by position by its ``position``, the rest at 0."""
    out = []
    for _, r in rows.iterrows():
        value = _number(r["value"])
        if value is None:
            continue
        mode, metric = r["mode"], r["metric"]
        step = _number(r.get("step"))
        if mode == "curve":
            out.append(Metric(_key(metric), value, int(step or 0)))
        elif mode == "extrapolation":
            seq = _number(r.get("seq_len"))
            position = _number(r.get("position"))
            out.append(Metric(_key(metric, f"L{int(seq)}" if seq else None), value, int(position or 0)))
        elif mode == "lr_check":
            out.append(Metric(_key(metric, f"lr{r['lr']}"), value))
        else:
            out.append(Metric(_key(mode, metric), value))
    return out


def _point_configs(folder: Path) -> dict[str, dict[str, str]]:
    configs = {}
    for path in sorted((folder / CONFIGS_DIR).glob("*.json")):
        configs[path.stem] = json.loads(path.read_text())
    return configs


def sweep_runs(folder: Path, table: pd.DataFrame, sweep: str | None, settings: dict[str, Any],
               artifacts: list[Path]) -> Run:
    """The runs to log for the sweep ``sweep`` (None: named by its folder's parent) in ``folder`` whose table is
    ``table``, with ``settings`` as the sweep's parameters."""
    folder = folder.resolve()
    name = sweep or folder.parent.name
    sweep_run = Run(f"sweep {name} ({folder.name})", params=flatten(settings),
                    tags={"blockbench.folder": str(folder), "blockbench.kind": "sweep"}, artifacts=artifacts)
    configs = _point_configs(folder)
    for point, rows in table.groupby("point", sort=True):
        own = rows[rows["arm"].isna()] if "arm" in rows else rows
        variant = str(rows["variant"].iloc[0]) if own.empty else str(own["variant"].iloc[0])
        status = "failed" if (rows["status"].fillna("ok") == "failed").any() else "ok"
        run = Run(f"{variant} ({point})", params=configs.get(str(point), {}),
                  tags={"blockbench.point": str(point), "blockbench.variant": variant, "blockbench.status": status,
                        "blockbench.kind": "point"},
                  metrics=measurement_metrics(own))
        quality = rows[rows["arm"].notna()] if "arm" in rows else rows.iloc[0:0]
        for (seed_variant, seed), seed_rows in quality.groupby(["variant", "seed"], sort=True):
            run.children.append(Run(f"{seed_variant} seed {int(seed)}", metrics=seed_metrics(seed_rows),
                                    tags={"blockbench.variant": str(seed_variant), "blockbench.seed": str(int(seed)),
                                          "blockbench.arm": str(seed_rows["arm"].iloc[0]),
                                          "blockbench.kind": "seed"}))
        sweep_run.children.append(run)
    return sweep_run
