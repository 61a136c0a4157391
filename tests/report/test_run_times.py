"""The run-times page (``ablations.report.run_times``): summed from the rows' wall times, and the committed
``docs/run_times.md`` is exactly what it builds from ``results/reference``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ablations.report.run_times import (
    CURVE,
    PAGE,
    QUALITY,
    REFERENCE,
    SCAN,
    TIMING,
    main,
    main_job,
    page,
    runs,
    untimed_folders,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reference_runs() -> pd.DataFrame:
    return runs(REFERENCE)


def test_the_committed_page_is_what_the_rows_build():
    assert PAGE.read_text(encoding="utf-8") == page(REFERENCE), (
        "docs/run_times.md is not what the committed rows give: run `python -m ablations.report.run_times`")


def test_every_folder_with_rows_is_on_the_page(reference_runs):
    folders = {p.parent.relative_to(ROOT).as_posix() for p in REFERENCE.rglob("results.csv")}
    assert set(reference_runs["folder"]) | set(untimed_folders(REFERENCE)) == folders


def test_the_sums_are_the_rows_wall_times(reference_runs):
    table = pd.read_csv(REFERENCE / "multiplier" / "results.csv", low_memory=False)
    [row] = reference_runs[reference_runs["folder"] == "results/reference/multiplier"].to_dict("records")
    for metric, column in ((TIMING, "timing"), (QUALITY, "quality"), (CURVE, "curve")):
        assert row[column] == pytest.approx(table.loc[table["metric"] == metric, "value"].sum())
    assert row["total"] == pytest.approx(row["timing"] + row["quality"] + row["curve"])
    seeds = table[table["metric"] == QUALITY].groupby("point")["seed"].nunique()
    assert row["seeds a point"] == f"{seeds.min()} to {seeds.max()}" and row["points trained"] == len(seeds)


def test_the_main_job_is_its_parts_at_the_default_curve(reference_runs):
    job = main_job(reference_runs)
    assert job["total"] == pytest.approx(sum(part[3] for part in job["parts"]))
    assert {part[2] for part in job["parts"]} == {TIMING, QUALITY, CURVE}
    default = yaml.safe_load((ROOT / "conf" / "train" / "default.yaml").read_text())
    assert job["curve seeds"] == default["budget_seeds"], "the main job's curve is not at the default seeds"


def test_the_command_rewrites_a_stale_page_and_checks_it(tmp_path, capsys):
    out = tmp_path / "run_times.md"
    out.write_text("stale\n")
    assert main(["--out", str(out), "--check"]) == 1 and "stale" in capsys.readouterr().out
    assert main(["--out", str(out)]) == 0 and "rewritten" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == page(REFERENCE)
    assert main(["--out", str(out), "--check"]) == 0 and "up to date" in capsys.readouterr().out


def test_a_reference_without_the_main_jobs_parts_is_one_line(tmp_path, capsys):
    shutil.copy(REFERENCE / "modern" / "results.csv", tmp_path / "results.csv")
    assert main(["--reference", str(tmp_path), "--out", str(tmp_path / "page.md")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "no phase_seconds rows of sweep 'norm'" in line
    assert not (tmp_path / "page.md").exists()


def test_each_scan_seed_counts_once_in_the_total(reference_runs):
    table = pd.read_csv(REFERENCE / "lr_scan" / "results.csv", low_memory=False)
    scans = table[table["metric"] == SCAN]
    assert len(scans) > 100
    row = reference_runs[reference_runs["folder"] == "results/reference/lr_scan"].iloc[0]
    assert row["scan"] == pytest.approx(scans.drop_duplicates(["arm", "seed"])["value"].sum())
    assert row["total"] == pytest.approx(row[["timing", "quality", "curve", "scan"]].sum())
