"""What a choice buys as the model trains longer: the ``horizon`` sweep's reading.

The sweep trains the all sweep's points at one width for several horizons (``conf/train/horizon_*.yaml``), each
horizon its own Holm family (``ablations.quality.stats``) with its own budget curve and known answers
(``ablations.quality.worth``). A horizon is told by its **bytes per parameter**: the training bytes (steps x batch x
context, one byte a token) over the GPT-2 baseline's parameters, the Chinchilla-style measure of how far a model has
trained (compute-optimal is about 20 tokens per parameter).

Per choice: Δ loss and the multiplier k (in FLOPs) at each horizon with their intervals; the trend of k per doubling
of bytes per parameter (``transfer.trend``: least squares over every seed and horizon, here compute doubles exactly
as bytes per parameter do, the width being fixed); and whether the verdict at the headline's horizon (the one
nearest the default quality model's bytes per parameter) is the verdict at the longest. Decision accuracy between
horizons is ``transfer.decision_accuracy`` with the horizon's steps as its scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ablations.quality.transfer import ANSWERED, _short, decision_accuracy, trend
from ablations.quality.worth import training_bytes_per_param

SWEEP = "horizon"


def bytes_per_param(table: pd.DataFrame) -> pd.Series:
    """Per ``train_steps`` of the sweep: the training bytes over the baseline's parameters, from its final-loss rows
    (``worth.training_bytes_per_param``)."""
    f = _finals(table)
    base = f[f["variant"] == f["baseline"]]
    return pd.Series({steps: training_bytes_per_param(g) for steps, g in base.groupby("train_steps")},
                     dtype=float, name="bytes_per_param")


def _finals(table: pd.DataFrame) -> pd.DataFrame:
    f = table[(table["sweep"] == SWEEP) & (table["metric"] == "val_loss") & (table["mode"] == "final")
              & (table["status"].fillna("ok") == "ok")].copy()
    for col in ("train_steps", "batch", "seq_len", "params", "value", "seed"):
        f[col] = pd.to_numeric(f[col], errors="coerce")
    return f


def seed_finals(table: pd.DataFrame) -> pd.DataFrame:
    """One row per horizon, arm and seed: the final loss (what decision accuracy orders)."""
    return _finals(table)[["train_steps", "variant", "seed", "value"]]


def horizon_table(summary: pd.DataFrame, worth: pd.DataFrame, table: pd.DataFrame, readings: pd.DataFrame,
                  headline_bpp: float, labels: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per choice: Δ loss and k at each horizon (a column per bytes per parameter), the trend of k, and
    whether the verdict at the horizon nearest ``headline_bpp`` holds at the longest."""
    bpp = bytes_per_param(table)
    s = summary[(summary["sweep"] == SWEEP) & (summary["metric"] == "val_loss")]
    s = s[s["reference"].isin(s["variant"].unique()) & (s["reference"] != s["variant"])]
    if s.empty or bpp.empty:
        return pd.DataFrame()
    near = bpp.index[int(np.argmin(np.abs(np.log(bpp.to_numpy() / headline_bpp))))]
    longest = bpp.index.max()
    w = worth[worth["sweep"] == SWEEP] if not worth.empty else worth
    rows = []
    for variant, g in s.groupby("variant", sort=False):
        row: dict[str, object] = {"choice": (labels or {}).get(str(variant), str(variant))}
        verdicts = {}
        for _, cell in g.sort_values("train_steps").iterrows():
            steps = cell["train_steps"]
            k = w[(w["variant"] == variant) & (w["train_steps"] == steps)] if not w.empty else w
            verdicts[steps] = cell["verdict"]
            row[f"{bpp[steps]:.3g} B/param"] = (
                f"Δ {_signed(cell['diff'])} [{_signed(cell['diff_lo'])}, {_signed(cell['diff_hi'])}] "
                f"{_short(cell['verdict'])}" + (f"; k {k['k_flops_text'].iloc[0]}" if len(k) else ""))
        own = readings[readings["sweep"] == SWEEP] if not readings.empty else readings
        row["trend of k"] = trend(own, variant, own["corpus"].iloc[0], "train_steps") if not own.empty else "—"
        first, last = verdicts.get(near), verdicts.get(longest)
        row[f"verdict at {bpp[near]:.3g} holds at {bpp[longest]:.3g} B/param"] = (
            "—" if first not in ANSWERED or last not in ANSWERED else "yes" if first == last
            else f"no: {_short(first)} → {_short(last)}")
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Settled:
    """The horizon the headline reads: the shortest whose k lies within the longest's interval for every choice
    (``settled_horizon``), with each choice's k over every horizon beside it."""

    steps: float
    bytes_per_param: float
    longest: bool  # no shorter horizon settled: the longest's k, with the range over horizons
    ranges: dict[str, tuple[float, float]]  # choice -> (lowest, highest) k over the horizons

    def phrase(self) -> str:
        """Why this horizon, in a clause a verdict's regime can carry."""
        return ("the longest horizon (k still moving at every shorter one)" if self.longest
                else "where k has stopped moving (every choice's k within the longest horizon's interval)")

    def line(self, labels: dict[str, str] | None = None) -> str:
        spread = "; ".join(f"{(labels or {}).get(v, v)} {lo:.3g}–{hi:.3g}×" for v, (lo, hi) in self.ranges.items())
        why = ("no shorter horizon's k lies within the longest's interval for every choice, so the longest's"
               if self.longest else "the shortest horizon whose k lies within the longest's 95% interval for every "
               "choice")
        head = (f"**The answer's horizon: {self.bytes_per_param:.3g} bytes per parameter, the longest; k has not "
                "stopped moving**" if self.longest
                else f"**Where k has stopped moving: {self.bytes_per_param:.3g} bytes per parameter**")
        return f"{head}, {why} (k over the horizons: {spread})."


def settled_horizon(worth: pd.DataFrame, bpp: pd.Series) -> Settled | None:
    """The shortest horizon (``bpp``: bytes per parameter by steps) at which every choice's k in FLOPs lies within
    the longest horizon's 95% interval; the longest itself where no shorter one does. None without k at the longest
    horizon for some choice, and for a sweep of one length (no shorter horizon to say whether k still moves)."""
    w = worth[(worth["sweep"] == SWEEP) & worth["expected"].isna()] if not worth.empty else worth
    if w.empty or len(bpp) < 2:
        return None
    w = w.assign(train_steps=pd.to_numeric(w["train_steps"], errors="coerce"))
    longest = float(bpp.idxmax())
    last = w[w["train_steps"] == longest].set_index("variant")
    if last.empty or last[["k_flops_lo", "k_flops_hi"]].isna().any().any():
        return None
    ranges = {str(v): (float(g["k_flops"].min()), float(g["k_flops"].max())) for v, g in w.groupby("variant")}
    for steps in sorted(bpp.index):
        here = w[w["train_steps"] == steps].set_index("variant")
        if set(here.index) >= set(last.index) and all(
                last.loc[v, "k_flops_lo"] <= here.loc[v, "k_flops"] <= last.loc[v, "k_flops_hi"] for v in last.index):
            return Settled(float(steps), float(bpp[steps]), float(steps) == longest, ranges)
    return Settled(longest, float(bpp[longest]), True, ranges)


def accuracy(table: pd.DataFrame) -> pd.DataFrame:
    """Decision accuracy of each shorter horizon against the longest, with its bytes per parameter."""
    d = decision_accuracy(seed_finals(table), "train_steps")
    if d.empty:
        return d
    bpp = bytes_per_param(table)
    d.insert(1, "bytes per parameter", d["train_steps"].map(lambda s: f"{bpp[s]:.3g}"))
    d["train_steps"] = d["train_steps"].astype(int)
    for col in ("decision accuracy", "accuracy without them"):
        d[col] = d[col].map(lambda x: "—" if math.isnan(x) else f"{100 * x:.0f}%")
    return d


def _signed(x: float) -> str:
    return "—" if pd.isna(x) else f"{x:+.3f}".replace("-", "−")
