"""The quality sections' tables, built from the quality summary: formatted cells, no prose."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ablations.quality.stats import by_variant_then_width, several_lengths, several_widths
from ablations.report.formatting import (
    fmt_ci,
    fmt_count,
    fmt_p,
    fmt_rate,
    fmt_seeds,
    fmt_verdict,
)
from ablations.report.tables import BASELINE

log = logging.getLogger("ablations")


def quality_setup(q: pd.DataFrame) -> str:
    """The trained model and budget, from the rows (the quality model is smaller than the timed one)."""
    final = q[(q["metric"] == "val_loss") & (q["mode"] == "final")]
    first = (final if not final.empty else q).iloc[0]
    seeds = ", ".join(str(int(v)) for v in sorted(q["seed"].dropna().unique()))
    parts = [f"d_model {int(first['d_model'])}, {int(first['n_layers'])} layers, {int(first['n_heads'])} heads"]
    if not pd.isna(first["batch"]) and not pd.isna(first["seq_len"]):
        parts.append(f"batch {int(first['batch'])} × context {int(first['seq_len'])}")
    if final["step"].notna().any():
        parts.append(f"{int(final['step'].max())} steps")
    parts.append(f"seeds {seeds}")
    corpus = q["corpus"].dropna().unique()
    if len(corpus):
        parts.append("corpus " + ", ".join(f"`{str(corpus)[:12]}`" for corpus in corpus))
    vocab = q["vocab_size"].dropna().unique() if "vocab_size" in q else []
    if len(vocab):  # tables written before token files carry no column: bytes, vocabulary 256
        unit = str(final["unit"].iloc[0]) if not final.empty else ""
        parts.append("vocabulary " + ", ".join(str(int(v)) for v in sorted(vocab)) + (f" (losses in {unit})" if unit
                                                                                       else ""))
    return "Quality runs (a small model trained from scratch, not the timed block): " + "; ".join(parts) + "."


def val_loss_table(s: pd.DataFrame, q: pd.DataFrame) -> pd.DataFrame:
    """Per comparison: the variant's mean [95% CI], the paired difference with its interval at the level Holm
    holds it to, p and Holm p, and the verdict with the smallest difference the test could have detected."""
    v = s[s["metric"] == "val_loss"]
    # A scale or horizon sweep trains each variant at several widths or lengths: its rows together, one per cell.
    by_width, by_length = several_widths(v), several_lengths(v)
    v = by_variant_then_width(v)
    unit = ", ".join(q.loc[q["metric"] == "val_loss", "unit"].dropna().unique()) or "?"
    col = lambda name: v.get(name, pd.Series(np.nan, index=v.index))  # a summary may lack a column
    group = ["variant", *(["d_model"] if by_width else []), *(["train_steps"] if by_length else [])]
    keys = list(v[group].itertuples(index=False, name=None)) if len(group) > 1 else list(v["variant"])
    mean_by = {m: q[q["metric"] == m].assign(train_steps=pd.to_numeric(q.get("train_steps"), errors="coerce"))
               .groupby(group)["value"].mean() for m in ("train_tokens_per_s", "train_wall_time")}
    per_point = {m: [by.get(k, np.nan) for k in keys] for m, by in mean_by.items()}
    widths = {"d_model (params)": [f"{int(d)} ({fmt_count(p)})" for d, p in zip(v["d_model"], col("params"),
                                                                                strict=True)]} if by_width else {}
    if by_length:
        widths["steps"] = [f"{int(n)}" for n in v["train_steps"]]
    return pd.DataFrame({
        "variant": v["variant"],
        **widths,
        "vs": v.get("reference", pd.Series(BASELINE, index=v.index)),
        "seeds": [fmt_seeds(n, st, t) for n, st, t in zip(v["n"], col("stopped"), col("target_mde"), strict=True)],
        f"val loss ({unit}) [95% CI]": [fmt_ci(m, lo, hi) for m, lo, hi in v[["mean", "ci_lo", "ci_hi"]].to_numpy()],
        "Δ vs reference [CI]": [fmt_ci(d, lo, hi, signed=True) for d, lo, hi in
                                v[["diff", "diff_lo", "diff_hi"]].to_numpy()],
        "CI level": col("alpha_adjusted").map(lambda a: "—" if pd.isna(a) else f"{100 * (1 - a):.3g}%"),
        "p / Holm p": [f"{fmt_p(p)} / {fmt_p(h)}" if not pd.isna(p) else "—"
                       for p, h in zip(col("p"), col("p_holm"), strict=True)],
        "verdict": [fmt_verdict(*r) for r in zip(v["verdict"], col("mde"), col("mde_note"), strict=True)],
        "diverged": col("diverged").map(fmt_count),
        "train tokens/s": [fmt_rate(t) for t in per_point["train_tokens_per_s"]],
        "wall time per seed (s)": ["—" if pd.isna(t) else f"{t:.3g}" for t in per_point["train_wall_time"]],
    })


def holm_sentence(s: pd.DataFrame) -> str:
    """How the verdicts of the validation-loss table were reached, with the size of its Holm family."""
    family = s.loc[s["metric"] == "val_loss"].get("family", pd.Series(dtype=float)).max()
    count = ("" if pd.isna(family) else " (none here: no comparison has two shared seeds)" if family == 0
             else f" ({int(family)} comparison{'s' if family != 1 else ''} here)")
    return ("Verdicts use Holm-Bonferroni across the sweep's comparisons of this quantity" + count
            + ", at a family-wise α = 0.05: a difference counts only when its Holm-adjusted p is below 0.05. "
            "Δ's interval is at the level Holm holds that comparison to (CI level), so it excludes zero exactly "
            "when the verdict names a difference. \"Could have detected |d| >= x\": the smallest true difference "
            "that test would find with 80% power, given these seeds' spread of paired differences."
            + _sequential_sentence(s))


def _sequential_sentence(s: pd.DataFrame) -> str:
    """How the seeds were chosen, where a comparison added them until answered (``ablations.quality.seeds``)."""
    v = s.loc[s["metric"] == "val_loss"]
    looks = pd.to_numeric(v.get("looks", pd.Series(dtype=float)), errors="coerce")
    if not (looks > 1).any():
        return ""
    budget = int((v.get("stopped", pd.Series(dtype=object)) == "budget").sum())
    return (" Seeds were added, each paired with the baseline's, until a comparison was answered (a difference "
            "found, or could-have-detected at most the target) or max_seeds ran out, looking only at planned seed "
            f"counts ({int(looks.max())} looks): each p enters Holm multiplied by its looks, so the stopping keeps the "
            "family-wise 0.05 (Bonferroni over the looks; `ablations.quality.seeds`). "
            + (f"‡ {budget} comparison{'s' if budget != 1 else ''} ran out of seeds unanswered: neither a "
               "difference found nor one of the target's size ruled out." if budget else
               "Every comparison was answered."))


def lr_check_table(q: pd.DataFrame) -> pd.DataFrame | None:
    """Each variant's final loss on one seed at 0.5x, 1x and 2x its own rate (``train.lr_check``), per length where the
    sweep trains several, and a flag where its best rate is another: its comparison may understate it."""
    check = q[q["metric"] == "lr_check_loss"]
    if check.empty or "lr" not in q:
        return None
    keys = ["variant", "train_steps"] if "train_steps" in check and check["train_steps"].nunique() > 1 else ["variant"]
    out = []
    for key, variant_check in check.groupby(keys):
        key = key if isinstance(key, tuple) else (key,)
        seed = variant_check["seed"].iloc[0]
        own = q[(q["metric"] == "val_loss") & (q["mode"] == "final") & (q["seed"] == seed)]
        for name, value in zip(keys, key, strict=True):
            own = own[own[name] == value]
        rate = pd.to_numeric(own["lr"], errors="coerce").dropna()
        if rate.empty:
            continue
        lr0 = float(rate.iloc[0])
        losses = {lr0: float(own["value"].iloc[0]),
                  **{float(r): float(v) for r, v in zip(variant_check["lr"], variant_check["value"], strict=True)}}
        finite = {r: v for r, v in losses.items() if pd.notna(v)}
        best = min(finite, key=finite.get) if finite else np.nan
        row = {"variant": key[0], **({"steps": int(key[1])} if len(keys) > 1 else {}), "seed": int(seed)}
        row.update({f"lr × {r / lr0:g}": f"{v:.4f}" if pd.notna(v) else "diverged" for r, v in sorted(losses.items())})
        row["best rate"] = "—" if pd.isna(best) else ("its own" if best == lr0 else f"‡ {best / lr0:g} × its own")
        out.append(row)
    return pd.DataFrame(out) if out else None


def trend_table(q: pd.DataFrame) -> pd.DataFrame | None:
    """Each variant trained at several widths: its effect at the ends and the slope per 10x parameters."""
    from ablations.quality.scaling import effect_trend

    t = effect_trend(q)
    if t.empty:
        return None

    def reading(r: pd.Series) -> str:
        if pd.isna(r["slope_lo"]):
            return "too few points for a slope"
        if r["slope_lo"] <= 0 <= r["slope_hi"]:
            return "no detectable trend over these widths"
        mean = (r["effect_smallest"] + r["effect_largest"]) / 2
        return "the difference narrows with size" if (r["slope_per_decade"] > 0) != (mean > 0) else \
            "the difference widens with size"

    return pd.DataFrame({
        "variant": t["variant"],
        "widths (d_model)": t["widths"],
        "Δ at the smallest (params)": [f"{d:+.4f} ({fmt_count(p)})" for d, p in
                                       zip(t["effect_smallest"], t["params_smallest"], strict=True)],
        "Δ at the largest (params)": [f"{d:+.4f} ({fmt_count(p)})" for d, p in
                                      zip(t["effect_largest"], t["params_largest"], strict=True)],
        "slope per 10× params [95% CI]": [fmt_ci(s, lo, hi, signed=True) for s, lo, hi in
                                          t[["slope_per_decade", "slope_lo", "slope_hi"]].to_numpy()],
        "p": t["p"].map(fmt_p),
        "points": t["n"].map(fmt_count),
        "reading": t.apply(reading, axis=1),
    })


def extrapolation_table(s: pd.DataFrame) -> pd.DataFrame | None:
    e = s[(s["metric"] == "extrap_loss") & s["seq_len"].notna()]
    if e["seq_len"].nunique() < 2:  # the training length alone is the validation loss table again
        return None
    cell = e.apply(lambda r: "cannot" if r["verdict"] == "cannot" or pd.isna(r["mean"])
                   else fmt_ci(r["mean"], r["ci_lo"], r["ci_hi"]), axis=1)
    grid = e.assign(cell=cell, length=e["seq_len"].astype(int)).drop_duplicates(["variant", "length"])
    grid = grid.pivot(index="variant", columns="length", values="cell")
    grid = grid.reindex(index=list(dict.fromkeys(e["variant"])), columns=sorted(grid.columns)).fillna("—")
    grid.columns = [f"{length} tokens" for length in grid.columns]
    return grid.reset_index()


def summarize_quality(table: pd.DataFrame) -> tuple[pd.DataFrame | None, str]:
    """``ablations.quality.stats.summarize`` of the whole table; (None, why) when absent or failing."""
    try:
        from ablations.quality.stats import summarize
    except ImportError:
        return None, ("Quality rows are present, but `ablations.quality.stats` is not importable here: "
                      "the quality summary is skipped.")
    try:
        summary = summarize(table)
    except Exception as exc:  # a broken summary must not take the rest of the report down
        log.warning("quality summary failed: %s", exc)
        return None, f"The quality summary failed ({type(exc).__name__}: {exc}); skipped."
    units = table.dropna(subset=["unit"]).groupby("metric")["unit"].first()
    return summary.assign(unit=summary["metric"].map(units)), ""
