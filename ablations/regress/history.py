"""One case's head/base ratio over every stored run of the check under a folder: the table and its figure."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ablations.config.errors import UsageError
from ablations.regress.confirm import NOT_CONFIRMED
from ablations.regress.paired import NOT_JUDGED
from ablations.regress.report_files import REPORT_JSON


def history_table(folder: Path, case: str) -> pd.DataFrame:
    """``case`` in every ``regress.json`` under ``folder``, oldest first."""
    rows = []
    for path in sorted(folder.rglob(REPORT_JSON)):
        report = json.loads(path.read_text())
        for entry in [*report.get("cases", []), *report.get("groups", [])]:
            if entry["name"] == case and "ratio" in entry:
                series = f"{report.get('machine', 'machine not recorded')}; torch {report.get('torch', '?')}"
                rows.append({"run": path.parent.name, "time": report["time"], "head": report["head"]["revision"][:12],
                             "series": series, "ratio": entry["ratio"], "lo": entry["lo"], "hi": entry["hi"],
                             "verdict": entry["verdict"]})
    return pd.DataFrame(rows).sort_values("time", ignore_index=True) if rows else pd.DataFrame()


def history_figure(table: pd.DataFrame, case: str, threshold_pct: float, path: Path) -> Path:
    """``table`` (``history_table``) drawn at ``path``: each run's ratio with its interval and verdict, one line per
    machine and torch series, the threshold's edges dashed; returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(max(5.0, 0.45 * len(table) + 2), 3.6))
    x = range(len(table))
    # Runs on different machines or torch versions are different series (a ratio moves with either): each its
    # own line, never one line joining them.
    series = list(dict.fromkeys(table["series"]))
    for i, name in enumerate(series):
        own = [j for j in x if table["series"].iloc[j] == name]
        ax.plot(own, table["ratio"].iloc[own], color=f"C{i}", lw=1, alpha=0.6, label=name)
    ax.errorbar(x, table["ratio"], yerr=[table["ratio"] - table["lo"], table["hi"] - table["ratio"]], fmt="none",
                ecolor="0.55", capsize=3)
    sns.scatterplot(x=list(x), y=table["ratio"], hue=table["verdict"], ax=ax, s=40, zorder=3,
                    palette={"regression": "#d62728", "improvement": "#2ca02c", "unchanged": "#1f77b4",
                             NOT_JUDGED: "#7f7f7f", NOT_CONFIRMED: "#ff7f0e"})
    for y, style in ((1.0, "-"), (1 + threshold_pct / 100, "--"), (1 - threshold_pct / 100, "--")):
        ax.axhline(y, color="0.3", lw=0.8, ls=style)
    ax.set_xticks(list(x), [f"{r}\n{h}" for r, h in zip(table["run"], table["head"], strict=True)], fontsize=7,
                  rotation=45, ha="right")
    ax.set_ylabel("head / base time (median, 95% CI)")
    ax.set_title(f"{case}: paired ratio per stored run (dashed: ±{threshold_pct:g}%)", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run_history(folder: Path, case: str, threshold: float, out: Path | None) -> int:
    """``--history FOLDER CASE``: the figure of ``case`` over the runs stored under ``folder``, written to ``out`` (a
    PNG, or a folder for it; by default in ``folder``) and its path printed."""
    if not folder.is_dir():
        raise UsageError(f"--history {folder}: not a folder")
    table = history_table(folder, case)
    if table.empty:
        raise UsageError(f"--history: no stored run under {folder} has case {case!r}")
    path = out or folder / f"history-{case.replace('/', '_')}.png"
    if path.suffix != ".png":
        path = path / f"history-{case.replace('/', '_')}.png"
    print(history_figure(table, case, threshold, path))
    return 0
