"""What a check leaves in its folder: the JSON report, the Markdown summary and each side's pytest-benchmark JSON."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from ablations.regress.summary import markdown

REPORT_JSON = "regress.json"
SUMMARY_MD = "summary.md"
SIDE_JSON = "{side}.benchmark.json"  # pytest-benchmark's format: `pytest-benchmark compare` reads them


def write_all(report: dict, sides: dict[str, dict], out: Path) -> None:
    """``out``: regress.json, summary.md, base/head pytest-benchmark JSON; the summary also goes to
    ``$GITHUB_STEP_SUMMARY`` when that is set (GitHub Actions shows it on the run's page)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_JSON).write_text(json.dumps(report, indent=1))
    text = markdown(report)
    (out / SUMMARY_MD).write_text(text)
    for side, data in sides.items():
        (out / SIDE_JSON.format(side=side)).write_text(json.dumps(data, indent=1))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a") as f:
            f.write(text + "\n")


def benchmark_json(report: dict, side: str, times: dict[str, list[float]]) -> dict:
    """One side's per-round seconds in pytest-benchmark's JSON layout, built with its own ``Stats``."""
    from pytest_benchmark import __version__
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info
    from pytest_benchmark.stats import Stats

    benchmarks = []
    for name, data in times.items():
        s = Stats()
        for t in data:
            s.update(t)
        component, _, mode = name.rpartition("/")
        benchmarks.append({
            "group": f"{component.split('/')[0]} {mode}", "name": name, "fullname": f"ablations.regress::{name}",
            "params": None, "param": None, "extra_info": {"side": side, "rounds_paired_with": "the other side"},
            "options": {"rounds": report["rounds"], "min_run_time": report["min_run_time"]},
            "stats": {**s.as_dict(), "data": data, "iterations": 1},
        })
    rev = report[side]["revision"]
    return {
        "machine_info": pytest_benchmark_generate_machine_info(),
        "commit_info": {"id": rev.split("+")[0], "dirty": "+" in rev, "project": "blockbench"},
        "benchmarks": benchmarks,
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(),
        "version": __version__,
    }
