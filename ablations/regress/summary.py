"""What a check leaves behind: the Markdown summary, the JSON report, each side's pytest-benchmark JSON, and
the figure of one case's ratio over stored runs."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pandas as pd

REPORT_JSON = "regress.json"
SUMMARY_MD = "summary.md"
SIDE_JSON = "{side}.benchmark.json"  # pytest-benchmark's format: `pytest-benchmark compare` reads them


def fmt_interval(c: dict) -> str:
    return f"{c['ratio']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}]"


def regression_lines(report: dict) -> list[str]:
    """One line per regressed case and signal, and per case the head cannot run: what exit status 1 means."""
    lines = []
    for c in report["cases"]:
        if c.get("verdict") == "failure":
            lines.append(f"failure: {c['name']}: {c['error']}")
        if c.get("verdict") == "regression":
            lines.append(f"regression: {c['name']}: time head/base {fmt_interval(c)} "
                         f"(> 1 + {report['threshold_pct']:g}%)")
        cg = c.get("callgrind") or {}
        if cg.get("verdict") == "regression":
            lines.append(f"regression: {c['name']}: instructions head/base {cg['ratio']:.4f} "
                         f"(> 1 + {report['callgrind_threshold_pct']:g}%)")
    return lines


def markdown(report: dict) -> str:
    regressions = regression_lines(report)
    head = (f"**{len(regressions)} regression(s)**" if regressions else "**no regression**")
    pct = f"{report['threshold_pct']:g}%"
    lines = [
        f"## Performance check: head `{report['head']['revision'][:12]}` against base "
        f"`{report['base']['revision'][:12]}` (`{report['base']['asked']}`)", "",
        f"{head} over {len(report['cases'])} case(s). Time: median head/base ratio over {report['rounds']} paired "
        f"rounds with its distribution-free interval, 95% family-wise over the cases (each at "
        f"{100 * report['case_confidence']:.3g}%, Bonferroni); a regression when the interval's low end is above "
        f"1 + {pct}, an improvement when its high end is below 1 − {pct}. "
        f"{report['callgrind_note']}", "",
        "| case | time head/base [95% CI] | verdict | base ms | instructions head/base | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in report["cases"]:
        if "error" in c:
            lines.append(f"| `{c['name']}` | — | {c['verdict']}: {c['error']} | — | — | — |")
            continue
        cg = c.get("callgrind") or {}
        cg_ratio = f"{cg['ratio']:.4f}" if "ratio" in cg else "—"
        lines.append(f"| `{c['name']}` | {fmt_interval(c)} | {c['verdict']} | {1e3 * c['base_median_s']:.3g} | "
                     f"{cg_ratio} | {cg.get('verdict', '—')} |")
    lines += ["", f"Wall time {report['wall_s']:.0f} s; torch {report['torch']}, {report['threads']} thread(s); "
              f"{report['intended_note']}".rstrip("; "), ""]
    return "\n".join(lines)


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


def history_table(folder: Path, case: str) -> pd.DataFrame:
    """``case`` in every ``regress.json`` under ``folder``, oldest first."""
    rows = []
    for path in sorted(folder.rglob(REPORT_JSON)):
        report = json.loads(path.read_text())
        for c in report.get("cases", []):
            if c["name"] == case and "ratio" in c:
                rows.append({"run": path.parent.name, "time": report["time"], "head": report["head"]["revision"][:12],
                             "ratio": c["ratio"], "lo": c["lo"], "hi": c["hi"], "verdict": c["verdict"]})
    return pd.DataFrame(rows).sort_values("time", ignore_index=True) if rows else pd.DataFrame()


def history_figure(table: pd.DataFrame, case: str, threshold_pct: float, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(max(5.0, 0.45 * len(table) + 2), 3.6))
    x = range(len(table))
    ax.errorbar(x, table["ratio"], yerr=[table["ratio"] - table["lo"], table["hi"] - table["ratio"]], fmt="none",
                ecolor="0.55", capsize=3)
    sns.scatterplot(x=list(x), y=table["ratio"], hue=table["verdict"], ax=ax, s=40, zorder=3,
                    palette={"regression": "#d62728", "improvement": "#2ca02c", "unchanged": "#1f77b4"})
    for y, style in ((1.0, "-"), (1 + threshold_pct / 100, "--"), (1 - threshold_pct / 100, "--")):
        ax.axhline(y, color="0.3", lw=0.8, ls=style)
    ax.set_xticks(list(x), [f"{r}\n{h}" for r, h in zip(table["run"], table["head"], strict=True)], fontsize=7,
                  rotation=45, ha="right")
    ax.set_ylabel("head / base time (median, 95% CI)")
    ax.set_title(f"{case}: paired ratio per stored run (dashed: ±{threshold_pct:g}%)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
