"""Seeds to confidence: mean, spread and a 95% Student-t interval per variant, and each variant against its
sweep's references, paired by seed, with a verdict that holds across the sweep's comparisons.

Paired, not Welch: every variant of a seed trains on the same bytes in the same order and is scored on the
same validation bytes, so a seed's data luck is shared and cancels in the per-seed difference. Each
comparison is ``scipy.stats.ttest_rel`` over the seeds both finished (``ablations.quality.inference``).

A sweep makes several comparisons at once: with five of them each at 0.05, the chance that at least one says
``better`` or ``worse`` by luck alone is about 23% (up to 25%). So the verdicts of one **family** are adjusted
together by Holm-Bonferroni at a family-wise 0.05. A family is one sweep's comparisons of one quantity: the
final validation loss, or the loss at one evaluation length (``extrap_loss`` at L). That is one table of the
report, the set a reader picks winners from; another sweep, or the same sweep at another length, is another
question and another family. Every comparison of the family counts: in the ladder both references of a
rung (the baseline and the rung below; for the first rung they are one comparison), and for ``extrap_loss``
past the training length both the baseline and the variant's own loss at the training length. Comparisons
without a test (one seed, a baseline that cannot run) are not members.

The ``transfer`` sweep asks its question once per rung and text, and the ``horizon`` sweep once per horizon, so
there each (width, text, steps) cell is a family (``CELL_FAMILIES``); every text and every training length
(``train_steps``) is compared within itself in any sweep.

Each quality-model width (``d_model``) is compared within itself: in ``+sweep=scale`` a variant at d=64 is
paired with the baseline at d=64, and every width's comparison is a member of the one family.

Per comparison: ``p`` (unadjusted), ``p_holm``, ``family`` (its size m), ``alpha_adjusted`` (the level its
own p is held to; the verdict is ``better``/``worse`` exactly when ``p_holm < 0.05``, which is exactly when
``p < alpha_adjusted``), ``diff_lo``/``diff_hi`` (the ``1 - alpha_adjusted`` interval, so it excludes zero
exactly when the verdict names a difference) and ``mde``: the smallest true difference this comparison
would detect 4 times in 5 at its level, given its seeds' spread (``mde_note`` says why there is none).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablations.quality.inference import (
    ALPHA,
    RUNG_SWEEP,
    PairedTest,
    holm,
    mde_note,
    mean_ci,
    minimum_detectable_effect,
    paired_test,
)
from ablations.results.row_arch import arch_from_row
from ablations.results.table import baseline_variant
from components.baselines import llama2_count


# How many of the five choices are Llama-2's, from the row's columns (the ladder's rung).
def _rung(row: pd.Series) -> int:
    """How many of the choices Llama-2 moved are at its value (0 = GPT-2 block, all = Llama-2 block)."""
    return llama2_count(arch_from_row(row))


def _by_seed(rows: pd.DataFrame) -> dict[int, float]:
    values = pd.to_numeric(rows["value"], errors="coerce")
    ok = (rows["status"] == "ok") & np.isfinite(values)
    return {int(s): float(v) for s, v in zip(rows.loc[ok, "seed"], values[ok], strict=True)}


COLUMNS = ["sweep", "variant", "d_model", "train_steps", "corpus", "params", "metric", "unit", "seq_len", "reference",
           "n", "mean", "std", "ci_lo", "ci_hi", "diverged",
           "diff", "diff_lo", "diff_hi", "diff_n", "verdict", "test",
           "diff_sd", "p", "p_holm", "family", "alpha_adjusted", "mde", "mde_note", "looks", "stopped", "target_mde"]
TEST = "paired t over seeds, Holm across the sweep's comparisons of this quantity"
# Sweeps whose every (quality width, text, steps) is its own family: the transfer study asks the all sweep's question
# again at each rung and text (ablations.quality.transfer), the horizon study at each horizon
# (ablations.quality.horizon).
CELL_FAMILIES = ("transfer", "horizon")


def verdict(mean: float, n: int, p_holm: float, alpha: float = ALPHA) -> str:
    """Lower loss is better; a difference counts only when its Holm-adjusted p is below ``alpha``."""
    if n < 2 or math.isnan(p_holm):
        return "too few seeds"
    if p_holm < alpha:
        return "better" if mean < 0 else "worse"
    return "no detectable difference"


def summarize(table: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per sweep, variant and measured quantity (final ``val_loss``; ``extrap_loss`` per evaluation length):
    n, mean, std and 95% CI over seeds, then one row per comparison (``reference``), each a paired difference
    with its p-values, interval, minimum detectable effect and verdict (module docstring: what a family is):

    - the point's baseline variant at the same quantity (its rows' ``baseline``: ``gpt2`` unless the run set
      ``baseline=llama2``, as ``leave_one_out`` and ``modern`` do);
    - in the ``ladder``, also the rung below (one Llama-2 choice fewer);
    - for ``extrap_loss`` past the training length, also the same variant at the training length
      (``"<variant> at <L>"``): the same target bytes with less context, so ``worse`` means the longer
      context hurt.

    Diverged seeds do not count in n and are counted in ``diverged``; ``cannot`` means no value exists
    (learned positions past their table)."""
    quality = table[((table["metric"] == "val_loss") & (table["mode"] == "final"))
                    | (table["metric"] == "extrap_loss")].copy()
    if quality.empty:
        return pd.DataFrame(columns=COLUMNS)
    # -1 stands for "none" in the keys: groupby drops NaN keys, and NaN != NaN would unpair them.
    quality["seq_len"] = quality["seq_len"].fillna(-1).astype(int)
    for key in ("d_model", "train_steps"):
        values = quality[key] if key in quality else pd.Series(np.nan, index=quality.index)
        quality[key] = pd.to_numeric(values, errors="coerce").fillna(-1).astype(int)
    if "params" not in quality:
        quality["params"] = np.nan
    # Each text is compared within itself too (``+sweep=transfer`` trains on two): "" for rows without a corpus.
    quality["corpus"] = quality["corpus"].fillna("").astype(str) if "corpus" in quality else ""
    rows, tests = _comparisons(quality)
    result = pd.DataFrame(rows, columns=COLUMNS).astype({"mde_note": object})
    # A transfer or horizon sweep asks its question once per cell: each is a family of its own.
    cell = pd.Series([f"{w}/{corpus}/{n}" if s in CELL_FAMILIES else "" for s, w, corpus, n in
                      zip(result["sweep"], result["d_model"], result["corpus"], result["train_steps"], strict=True)],
                     index=result.index)
    for _, family in result.groupby([result["sweep"], result["metric"], result["seq_len"], cell], sort=False):
        _decide(result, family.index, [tests.get(i) for i in family.index], alpha)
    result["seq_len"] = result["seq_len"].where(result["seq_len"] >= 0)
    result["d_model"] = result["d_model"].where(result["d_model"] >= 0)
    result["train_steps"] = result["train_steps"].where(result["train_steps"] >= 0)
    return result


def _comparisons(quality: pd.DataFrame) -> tuple[list[dict], dict[int, PairedTest]]:
    """One row per variant and reference; the paired test of each row that has one, by row number."""
    keys = ["sweep", "metric", "seq_len", "d_model", "train_steps", "corpus", "variant"]
    groups = {k: g for k, g in quality.groupby(keys, sort=False)}
    seeds = {k: _by_seed(g) for k, g in groups.items()}
    cannot = {k: bool((g["statistic"] == "cannot").all()) for k, g in groups.items()}
    rungs = {k: _rung(g.iloc[0]) for k, g in groups.items()}
    shortest = quality.groupby(["sweep", "metric"])["seq_len"].min()
    # Every comparison of a variant read the seeds its final-loss rule chose, the extrapolation's too.
    rules = {k: _seed_rule_of(g) for k, g in quality.groupby(["sweep", "d_model", "train_steps", "corpus", "variant"],
                                                             sort=False)}
    out: list[dict] = []
    tests: dict[int, PairedTest] = {}
    for key, g in groups.items():
        sweep, metric, seq_len, width, steps, corpus, variant = key
        own = mean_ci(list(seeds[key].values()))
        base = baseline_variant(str(sweep), g)
        references = {base: (sweep, metric, seq_len, width, steps, corpus, base)}
        if sweep == RUNG_SWEEP:
            below = [k[6] for k in groups if k[:6] == key[:6] and rungs[k] == rungs[key] - 1]
            references.update({v: (sweep, metric, seq_len, width, steps, corpus, v) for v in below[:1]})
        first = int(shortest[(sweep, metric)])
        if metric == "extrap_loss" and seq_len > first:
            references[f"{variant} at {first}"] = (sweep, metric, first, width, steps, corpus, variant)
        params = pd.to_numeric(g["params"], errors="coerce").median()
        seeds_rule = rules.get((sweep, width, steps, corpus, variant), _seed_rule_of(g.iloc[:0]))
        units = g["unit"].dropna().unique() if "unit" in g else []
        for label, ref in references.items():
            row = {"sweep": sweep, "variant": variant, "d_model": width, "train_steps": steps, "corpus": corpus,
                   "params": params,
                   "metric": metric, "unit": units[0] if len(units) else None,
                   "seq_len": seq_len, "reference": label,
                   "n": own.n, "mean": own.mean, "std": own.std, "ci_lo": own.lo, "ci_hi": own.hi,
                   "diverged": int((g["status"] == "diverged").sum()), "test": TEST}
            if cannot[key]:
                row["verdict"] = "cannot"
            elif ref == key:
                row["verdict"] = "baseline"
            elif ref not in seeds:
                row["verdict"] = "no baseline in sweep"
            elif cannot[ref]:
                row["verdict"] = "no comparison: the baseline cannot run at this length"
            else:
                t = paired_test(seeds[key], seeds[ref])
                row.update(diff=t.mean, diff_n=t.n, diff_sd=t.sd, p=t.p, **seeds_rule)
                tests[len(out)] = t
            out.append(row)
    return out, tests


def _seed_rule_of(g: pd.DataFrame) -> dict:
    """How a variant's seeds were chosen, from its final-loss rows: the looks its stopping rule planned (1: fixed
    seeds, and tables without the rule's columns), how it stopped, and its target."""
    final = g[(g["metric"] == "val_loss") & (g["mode"] == "final")] if "looks" in g else g.iloc[:0]
    looks = pd.to_numeric(final.get("looks", pd.Series(dtype=float)), errors="coerce").max()
    stopped = final["stopped"].dropna() if "stopped" in final else pd.Series(dtype=object)
    target = pd.to_numeric(final.get("target_mde", pd.Series(dtype=float)), errors="coerce").max()
    return {"looks": 1 if pd.isna(looks) else int(looks), "stopped": stopped.iloc[0] if len(stopped) else None,
            "target_mde": target}


def _decide(result: pd.DataFrame, index: pd.Index, tests: list[PairedTest | None], alpha: float) -> None:
    """Holm over one family's tests, then each member's interval, minimum detectable effect and verdict.

    A comparison whose seeds were chosen sequentially enters Holm with ``looks x p`` (``ablations.quality.seeds``:
    a valid p-value whatever the stopping read), so its own p is held to Holm's level over ``looks``."""
    looks = result.loc[index, "looks"].fillna(1).to_numpy(dtype=float)  # 1: fixed seeds, or no test
    p_raw = np.array([np.nan if t is None else t.p for t in tests], dtype=float)
    p_holm, level = holm(np.minimum(1.0, p_raw * looks), alpha)  # NaN stays NaN
    members = int(np.isfinite(p_holm).sum())
    for i, t, ph, a in zip(index, tests, p_holm, level / looks, strict=True):
        if t is None:
            continue
        lo, hi = t.interval(a)
        result.loc[i, ["p_holm", "family", "alpha_adjusted", "diff_lo", "diff_hi"]] = [ph, members, a, lo, hi]
        result.loc[i, "mde"] = minimum_detectable_effect(t.sd, t.n, a) if not math.isnan(a) else math.nan
        result.loc[i, "mde_note"] = mde_note(t.sd, t.n)
        result.loc[i, "verdict"] = verdict(t.mean, t.n, ph, alpha)


def several_widths(summary: pd.DataFrame) -> bool:
    """Whether a summary compares variants at more than one quality-model width (``+sweep=scale``)."""
    return "d_model" in summary and summary["d_model"].nunique() > 1


def several_lengths(summary: pd.DataFrame) -> bool:
    """Whether a summary compares variants trained for more than one number of steps (``+sweep=horizon``)."""
    return "train_steps" in summary and summary["train_steps"].nunique() > 1


def by_variant_then_width(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of a summary with each variant's widths and lengths together (variants in first-seen order, widths
    then steps rising); unchanged where there is one of each."""
    keys = [k for k, several in (("d_model", several_widths(summary)), ("train_steps", several_lengths(summary)))
            if several]
    if not keys:
        return summary
    first = {name: i for i, name in enumerate(dict.fromkeys(summary["variant"]))}
    order = summary["variant"].map(first)
    return summary.assign(_order=order).sort_values(["_order", *keys], kind="stable").drop(columns="_order")
