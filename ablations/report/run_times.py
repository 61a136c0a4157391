"""How long each committed reference run took, read from its rows: ``docs/run_times.md``.

Every point writes its wall time as rows: ``phase_seconds`` for each timing phase, ``train_wall_time`` for each
quality seed and ``budget_wall_time`` for each seed of the baseline's compute curve. This module sums them per
folder and sweep under ``results/reference`` and writes the page, so no doc states a run time by hand;
``tests/report/test_run_times.py`` fails when the committed page is not what it builds.

``python -m ablations.report.run_times`` rewrites the page; ``--check`` only says whether it is current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ablations.report.formatting import markdown_table
from ablations.report.tables import ReportError, load_table

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "results" / "reference"
PAGE = ROOT / "docs" / "run_times.md"

TIMING, QUALITY, CURVE = "phase_seconds", "train_wall_time", "budget_wall_time"
# Each learning-rate scan seed's wall time (``ablations.quality.tuning``); a seed a later point reads from the ledger
# repeats its rows, so each (arm, seed) counts once.
SCAN = "lr_scan_wall_time"
# The main job (`+sweep=norm`) at the default settings, from the run of it committed whole (`main_job/README.md` has
# its end-to-end time against the code before the multiplier): its timing, quality seeds and the baseline's curve.
MAIN_JOB = (("main_job", "norm", TIMING), ("main_job", "norm", QUALITY), ("main_job", "norm", CURVE))


def run_folders(reference: Path = REFERENCE) -> list[Path]:
    """Every folder under ``reference`` (itself first) that holds a results table."""
    return sorted((p.parent for p in reference.rglob("results.csv")), key=lambda p: (p != reference, str(p)))


def untimed_folders(reference: Path = REFERENCE) -> list[str]:
    """The folders whose rows carry no wall time (measured before points wrote it)."""
    return [_label(f, reference) for f in run_folders(reference)
            if not load_table(f)["metric"].isin([TIMING, QUALITY, CURVE]).any()]


def _label(folder: Path, reference: Path) -> str:
    return folder.relative_to(reference.parent.parent).as_posix()


def _sweep(sweep: str, compiled: pd.Series) -> str:
    """The sweep's label: ``(compile=true)`` where its timing rows measured compiled."""
    return f"{sweep} (compile=true)" if len(compiled) and compiled.astype(str).eq("True").all() else sweep


def _machine(rows: pd.DataFrame) -> str:
    """The machine the rows name: CPU or GPU, torch threads, dtype and torch build."""
    def values(column: str) -> str:
        return " / ".join(sorted({str(v) for v in rows[column].dropna()}))

    threads = values("threads")
    plural = "" if threads == "1" else "s"
    return f"{values('device_name')}, {threads} thread{plural}, {values('dtype')}, torch {values('torch')}"


def _seconds(v: float) -> str:
    return "—" if pd.isna(v) or v == 0 else f"{v:,.0f}"


def runs(reference: Path = REFERENCE) -> pd.DataFrame:
    """One row per folder, sweep and compile setting: points, seeds and the summed wall times of their rows."""
    out = []
    for folder in run_folders(reference):
        table = load_table(folder)
        timed = table[table["metric"].isin([TIMING, QUALITY, CURVE, SCAN])]
        scans = timed["metric"].eq(SCAN)
        timed = pd.concat([timed[~scans], timed[scans].drop_duplicates(["arm", "seed"])], ignore_index=True)
        # A sweep measured compiled (``compile=true``) is a run of its own; a quality row's ``compile`` is its
        # training step's, which does not make its sweep another run.
        compiled = timed["compile"].astype(str).eq("True") & timed["metric"].eq(TIMING)
        for (sweep, _), rows in timed.groupby([timed["sweep"], compiled], sort=False):
            seconds = rows.groupby("metric")["value"].sum()
            seeds = rows[rows["metric"] == QUALITY].groupby("point")["seed"].nunique()
            out.append({
                "folder": _label(folder, reference),
                "sweep": _sweep(sweep, rows.loc[rows["metric"] == TIMING, "compile"]),
                "points timed": rows.loc[rows["metric"] == TIMING, "point"].nunique(),
                "timing": seconds.get(TIMING, 0.0),
                "points trained": len(seeds),
                "seeds a point": f"{seeds.min()} to {seeds.max()}" if len(seeds) and seeds.min() != seeds.max()
                else (str(seeds.min()) if len(seeds) else "—"),
                "quality": seconds.get(QUALITY, 0.0),
                "median seed": rows.loc[rows["metric"] == QUALITY, "value"].median(),
                "curve seeds": rows.loc[rows["metric"] == CURVE, "seed"].nunique(),
                "curve": seconds.get(CURVE, 0.0),
                "scan": seconds.get(SCAN, 0.0),
                "machine": _machine(rows),
            })
    frame = pd.DataFrame(out)
    frame["total"] = frame[["timing", "quality", "curve", "scan"]].sum(axis=1)
    return frame


def main_job(frame: pd.DataFrame, reference: Path = REFERENCE) -> dict[str, object]:
    """The main job's parts (``MAIN_JOB``), each a row of ``frame``, and their sum."""
    column = {TIMING: "timing", QUALITY: "quality", CURVE: "curve"}
    parts = []
    for sub, sweep, metric in MAIN_JOB:
        folder = _label(reference / sub if sub else reference, reference)
        row = frame[(frame["folder"] == folder) & (frame["sweep"] == sweep)]
        if row.empty:
            raise ReportError(f"{folder} has no {metric} rows of sweep {sweep!r}")
        parts.append((folder, sweep, metric, float(row[column[metric]].iloc[0]), row.iloc[0]))
    quality = next(r for _, _, m, _, r in parts if m == QUALITY)
    curve = next(r for _, _, m, _, r in parts if m == CURVE)
    return {"parts": parts, "total": sum(p[3] for p in parts), "seeds": quality["seeds a point"],
            "curve seeds": int(curve["curve seeds"]), "points": int(quality["points trained"])}


def _minutes(seconds: float) -> str:
    return f"{seconds:,.0f} s ({seconds / 60:.0f} min)"


def page(reference: Path = REFERENCE) -> str:
    """``docs/run_times.md`` as the committed rows give it."""
    frame = runs(reference)
    job = main_job(frame, reference)
    what = {TIMING: "timing", QUALITY: "quality seeds", CURVE: "the baseline's compute curve"}
    parts = "\n".join(f"- {what[m]}: {_seconds(s)} s, `{folder}`, sweep `{sweep}` ({row['machine']})"
                      for folder, sweep, m, s, row in job["parts"])
    table = frame.assign(**{column: frame[column].map(_seconds)
                            for column in ("timing", "quality", "median seed", "curve", "scan", "total")})
    for column in ("points timed", "points trained", "curve seeds"):
        table[column] = table[column].map(lambda n: str(n) if n else "—")
    table["folder"] = table["folder"].map(lambda f: f"`{f}`")
    missing = untimed_folders(reference)
    untimed = f"\nNo wall-time rows (measured before points wrote them): {', '.join(f'`{f}`' for f in missing)}.\n" \
        if missing else ""
    columns = ["folder", "sweep", "points timed", "timing", "points trained", "seeds a point", "quality",
               "median seed", "curve seeds", "curve", "scan", "total", "machine"]
    return f"""# Run times

**With this page you can** tell how long a sweep, or the main job, takes before you start it.

<!-- Written by `python -m ablations.report.run_times` from results/reference/**/results.csv; do not edit. -->

Every figure is summed from the rows a run wrote: `phase_seconds` for its timing (each point's build, the machine's
ceilings, every shape, decode and prefill), `train_wall_time` for each quality seed (its training, evaluations and
extrapolation), `budget_wall_time` for each seed of the baseline's compute curve
([Quality](quality.md#what-a-choice-buys-in-compute)) and `lr_scan_wall_time` for each learning-rate scan seed
(each counted once, the seeds a run read from an earlier one's ledger included). Hydra's start-up, reading the
corpus and writing the report are not in the rows, so a run takes a little longer end to end. Where a folder's
README says something else ran on the machine beside it, read its times as upper bounds.

## The main job

`python -m ablations +sweep=norm` at the default profile: {job['points']} points, {job['seeds']} quality seeds a
point (seeds are added until the comparison is answered) and the baseline's curve on {job['curve seeds']} seeds,
**{_minutes(job['total'])}**, summed from the runs that measured its parts:

{parts}

## Every committed run

Seconds, summed over the rows of each folder's sweep; "median seed" is one quality seed's wall time.

{markdown_table(table[columns])}
{untimed}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablations.report.run_times", description=__doc__.split("\n")[0])
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="the folder of committed runs")
    parser.add_argument("--out", type=Path, default=PAGE, help="the page to write (docs/run_times.md)")
    parser.add_argument("--check", action="store_true", help="only say whether the page is current (exit 1 if not)")
    args = parser.parse_args(argv)
    try:
        text = page(args.reference)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    current = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
    if args.check:
        print(f"{args.out}: {'up to date' if current else 'stale: run python -m ablations.report.run_times'}")
        return 0 if current else 1
    if not current:
        args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {'up to date' if current else 'rewritten'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
