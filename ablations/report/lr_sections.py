"""What the learning-rate scan found (``ablations.quality.lr_scan``), and what each arm's own rate changes.

``scan_table``: per arm (and per budget of the baseline's curve, where scanned) the mean final loss over the scan
seeds at every rate tried, the best in bold. ``tuned_against_shared``: per choice, Δ loss and the compute multiplier
k at each arm's own rate (a sweep run with ``train.lr_scan`` or tuned rates) beside the same comparison at one shared
rate (the ``all`` sweep at ``train.lr``), and whether the verdict changes. ``tuned_rates_yaml``: the chosen rates as the
``train.tuned_lr`` entry the configuration commits (``python -m ablations.report.tuned_rates FOLDER``).
"""

from __future__ import annotations

import math

import pandas as pd

from ablations.quality.learning_rate import budget_key

SCAN_LOSS, TUNED = "lr_scan_loss", "lr_tuned"
# A horizon sweep scans each training length on its own (under wsd one run per rate trains them all): its rows, means
# and choices are kept apart by it.
LENGTH = "train_steps"
# The sweep the shared-rate answer comes from, and the one that scans each arm's rate.
SHARED_SWEEP, TUNED_SWEEP = "all", "lr_scan"


def scan_rows(q: pd.DataFrame) -> pd.DataFrame:
    """The scan seeds' final losses: one row per arm, training length, budget, rate and seed."""
    rows = q[(q["metric"] == SCAN_LOSS)].copy() if "metric" in q else pd.DataFrame()
    if rows.empty:
        return rows
    for col in ("lr", "value", "budget", "seed", LENGTH):
        rows[col] = pd.to_numeric(rows[col], errors="coerce") if col in rows else math.nan
    rows["budget"] = rows["budget"].fillna(1.0)
    rows[LENGTH] = rows[LENGTH].fillna(0)
    return rows.drop_duplicates(["variant", LENGTH, "budget", "lr", "seed"])


def scan_table(q: pd.DataFrame) -> pd.DataFrame | None:
    """Per arm and budget: the mean final loss over the scan seeds at each rate (bold: the rate the run chose, by the
    mean over every seed it trained there; ∞: diverged), the seeds (more at the rates confirmed), the rate chosen
    (flagged where it sits on the edge of what was tried), and at 1x the evaluation seeds' mean there (count)."""
    rows = scan_rows(q)
    if rows.empty:
        return None
    means = rows.groupby(["variant", LENGTH, "budget", "lr"], sort=False)["value"].agg(
        lambda v: v.mean() if v.notna().all() else math.inf)
    tuned = q[q["metric"] == TUNED] if "metric" in q else q
    tuned_steps = (pd.to_numeric(tuned[LENGTH], errors="coerce").fillna(0) if LENGTH in tuned
                   else pd.Series(0, index=tuned.index))
    several = rows[LENGTH].nunique() > 1
    out = []
    for (variant, steps, budget), g in means.groupby(level=["variant", LENGTH, "budget"], sort=False):
        losses = g.droplevel(["variant", LENGTH, "budget"]).sort_index()
        chosen = tuned[(tuned["variant"] == variant) & (tuned_steps == steps)
                       & (pd.to_numeric(tuned["budget"], errors="coerce").fillna(1.0) == budget)]
        best = float(chosen["value"].iloc[0]) if not chosen.empty else float(losses.idxmin())
        edge = best in (losses.index.min(), losses.index.max())
        mine = rows[(rows["variant"] == variant) & (rows[LENGTH] == steps) & (rows["budget"] == budget)]
        per_rate = mine.groupby("lr")["seed"].nunique()
        more = ", ".join(f"{r:.3g}" for r in per_rate.index[per_rate == per_rate.max()])
        seeds = (f"{per_rate.min()}" if per_rate.min() == per_rate.max()
                 else f"{per_rate.min()} ({per_rate.max()} at {more})")
        row: dict[str, object] = {"arm": variant, **({"steps": int(steps)} if several else {}),
                                  "budget": f"{budget:g}×"}
        for rate in sorted(set(rows["lr"])):
            loss = losses.get(rate)
            row[f"{rate:.3g}"] = ("" if loss is None else "∞" if math.isinf(loss)
                                  else f"**{loss:.3f}**" if rate == best else f"{loss:.3f}")
        row["rate chosen"] = f"{best:.3g}" + (" (on the edge)" if edge else "")
        row["scan seeds"] = seeds
        if budget == 1.0:
            row["evaluation seeds there"] = _evaluated(q, str(variant), best, steps if several else None)
        out.append(row)
    frame = pd.DataFrame(out).fillna("")
    if (frame["budget"] == "1×").all():
        frame = frame.drop(columns="budget")
    return frame


def _evaluated(q: pd.DataFrame, variant: str, rate: float, steps: float | None = None) -> str:
    """The arm's evaluation seeds at the rate chosen (at ``steps``, where the sweep trained several lengths): their
    mean final loss and count, which the scan seeds' mean there promised (a winner's curse shows as a fresh mean well
    above it)."""
    f = q[(q["metric"] == "val_loss") & (q["mode"] == "final") & (q["variant"] == variant)
          & (q["status"].fillna("ok") == "ok")]
    if steps is not None:
        f = f[pd.to_numeric(f[LENGTH], errors="coerce") == steps]
    f = f.drop_duplicates(["seed"])
    f = f[pd.to_numeric(f["lr"], errors="coerce").sub(rate).abs() < 1e-12]
    if f.empty:
        return "—"
    return f"{pd.to_numeric(f['value']).mean():.3f} ({len(f)})"


def chosen_rates(q: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per arm: its chosen rate at 1x the steps (``"1"``) and at every budget scanned, from the ``lr_tuned`` rows."""
    tuned = q[q["metric"] == TUNED] if "metric" in q else q
    out: dict[str, dict[str, float]] = {}
    for r in tuned.itertuples(index=False):
        budget = float(r.budget) if pd.notna(r.budget) else 1.0
        out.setdefault(str(r.variant), {})[budget_key(budget)] = float(r.value)
    return out


def tuned_rates_yaml(q: pd.DataFrame, regime: str, scan: str) -> str:
    """The ``train.tuned_lr`` entry for ``regime`` as YAML: each arm's rate, and per budget where the best moved."""
    chosen = chosen_rates(q)
    if not chosen:
        return ""
    lines = [f"  {regime}:", f"    scan: {scan!r}".replace("'", '"'), "    rates:"]
    lines += [f"      {arm}: {rates['1']:.3g}" for arm, rates in chosen.items() if "1" in rates]
    moved = {arm: {b: r for b, r in rates.items() if b != "1" and r != rates.get("1")} for arm, rates in chosen.items()}
    moved = {arm: rates for arm, rates in moved.items() if rates}
    if moved:
        lines.append("    budget_rates:")
        for arm, rates in moved.items():
            lines.append(f"      {arm}:")
            lines += [f'        "{b}": {r:.3g}' for b, r in rates.items()]
    return "\n".join(lines) + "\n"


def tuned_against_shared(summary: pd.DataFrame | None, worth: pd.DataFrame,
                         labels: dict[str, str] | None = None) -> pd.DataFrame | None:
    """Per choice compared in both the shared-rate sweep and the tuned one: Δ and k at each, and the verdicts."""
    if summary is None or summary.empty:
        return None
    s = summary[(summary["metric"] == "val_loss") & (summary["reference"] != summary["variant"])]
    shared, tuned = s[s["sweep"] == SHARED_SWEEP], s[s["sweep"] == TUNED_SWEEP]
    if shared.empty or tuned.empty:
        return None
    rows = []
    for variant in tuned["variant"].unique():
        a, b = shared[shared["variant"] == variant], tuned[tuned["variant"] == variant]
        if a.empty:
            continue
        a, b = a.iloc[0], b.iloc[0]
        row = {"choice": (labels or {}).get(str(variant), str(variant)),
               "Δ at one shared rate": _delta(a), "Δ at each arm's own rate": _delta(b),
               "k at one shared rate": _k(worth, SHARED_SWEEP, variant),
               "k at each arm's own rate": _k(worth, TUNED_SWEEP, variant)}
        row["verdict changes"] = "no" if a["verdict"] == b["verdict"] else f"yes: {a['verdict']} → {b['verdict']}"
        rows.append(row)
    return pd.DataFrame(rows) if rows else None


def _delta(cell: pd.Series) -> str:
    def signed(x: float) -> str:
        return f"{x:+.3f}".replace("-", "−")
    return f"{signed(cell['diff'])} [{signed(cell['diff_lo'])}, {signed(cell['diff_hi'])}] {cell['verdict']}"


def _k(worth: pd.DataFrame, sweep: str, variant: str) -> str:
    if worth.empty:
        return "—"
    k = worth[(worth["sweep"] == sweep) & (worth["variant"] == variant)]
    return str(k["k_flops_text"].iloc[0]) if len(k) else "—"
