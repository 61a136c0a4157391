"""The reading of ``evidence="extrapolation"`` (a position scheme's claim to extend past its training length): each
value's loss by evaluation length, the claimed value's growth against GPT-2's value's and each reference value's, or
a value's against the block it was paired with. Every value, and how prose shows it, is the group's declaration's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablations.report.claim_rows import flip_value, flip_variant, sweep_of, variant_row
from ablations.report.flip_sets import flip_labels
from ablations.report.readings import NOT_MEASURED, speed_word
from ablations.results.row_arch import arch_from_row
from blockbench import Choice, Claim


def extrapolation(choice: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
                  sizes: pd.DataFrame) -> tuple[str, str]:
    """A position scheme's claim to extend past its training length: every scheme's loss by evaluation length."""
    ext = extrapolation_evidence(choice, table, sweep_of(choice, claim))
    r = variant_row(cmp, flip_variant(choice), sweep_of(choice, claim))
    speed_txt = f"; its cost: forward {speed_word(r, 'fwd')} at {r['shape']}" if r is not None else ""
    if ext is None:
        return NOT_MEASURED + " (no extrapolation rows)" + speed_txt, NOT_MEASURED + "."
    measured = "; ".join(f"{v}: {_curve_text(curve)}" for v, curve in ext.items()) + speed_txt
    return measured, _growth_reading(choice, ext)


def extrapolation_evidence(choice: Choice, table: pd.DataFrame,
                           sweep: str | None = None) -> dict[str, pd.Series] | None:
    """Per variant of a one-choice comparison of ``choice`` (the GPT-2 block and each flip of ``choice``), mean loss by
    evaluation length (NaN = cannot), keyed by ``choice``'s value; from ``sweep`` (default: ``choice``'s own) where it
    has the claimed value's rows. None without the claimed value's rows (``flip_value``)."""
    names = {("gpt2" if v == choice.gpt2 else choice.value_name(v)): v for v in choice.values}
    rows = table[(table["metric"] == "extrap_loss") & (table["status"].fillna("ok") == "ok")]
    rows = rows[rows["variant"].isin(names)]
    claimed = flip_variant(choice)
    if rows.empty or not (rows["variant"] == claimed).any():
        return None
    own = rows[rows["sweep"] == (sweep or choice.group)]
    rows = own if (own["variant"] == claimed).any() else rows
    return {names[v]: g.groupby("seq_len")["value"].mean().sort_index() for v, g in rows.groupby("variant")}


def extrapolation_against_baseline(choice: Choice, claim: Claim, value: str, table: pd.DataFrame, cmp: pd.DataFrame,
                                   quality: pd.DataFrame | None, sizes: pd.DataFrame) -> tuple[str, str]:
    """A position scheme's loss by evaluation length beside its baseline's (the block it was paired with: RoPE in
    Llama-2's, learned positions in GPT-2's), from the first of its flips the run trained."""
    rows = table[(table["metric"] == "extrap_loss") & (table["status"].fillna("ok") == "ok")]
    for variant in flip_labels(choice, value):
        mine = rows[rows["variant"] == variant]
        if mine.empty:
            continue
        sweep = mine["sweep"].iloc[0]
        mine = mine[mine["sweep"] == sweep]
        named = mine["baseline"].dropna() if "baseline" in mine else pd.Series(dtype=object)
        base_name = str(named.iloc[0]) if len(named) else "gpt2"
        base = rows[(rows["variant"] == base_name) & (rows["sweep"] == sweep)]
        curve = mine.groupby("seq_len")["value"].mean().sort_index()
        measured = f"`{variant}`: {_curve_text(curve)}"
        if base.empty:
            return measured + f" (sweep `{sweep}`; no `{base_name}` rows beside it)", "No baseline to compare with."
        base_value = choice.shown(getattr(arch_from_row(base.iloc[0]), choice.group).name)
        bcurve = base.groupby("seq_len")["value"].mean().sort_index()
        measured += f"; `{base_name}` ({base_value}): {_curve_text(bcurve)} (sweep `{sweep}`)"
        g, gb = _growth(curve), _growth(bcurve)
        L0, L1 = int(curve.index[0]), int(curve.index[-1])
        shown = choice.shown(value)
        if pd.isna(g):
            return measured, f"{shown} could not be evaluated at {L1}."
        reading = f"{shown}'s loss changes {100 * (g - 1):+.1f}% from {L0} to {L1} tokens"
        if pd.isna(gb):
            reading += f"; {base_value} cannot be evaluated past its table at all"
        else:
            reading += f", {'less' if g < gb else 'no less'} than {base_value}'s {100 * (gb - 1):+.1f}%"
        verdict_text = "extrapolates as claimed" if g <= 1.0 else (
            "degrades past its training length, less than its baseline" if pd.isna(gb) or g < gb else
            "does not extrapolate better than its baseline here")
        return measured, f"{reading}: {verdict_text} (means over seeds; no interval on the growth)."
    return NOT_MEASURED + " (no extrapolation rows)", NOT_MEASURED + "."


def _curve_text(curve: pd.Series) -> str:
    parts = [f"{v:.3f} at {int(L)}" if not pd.isna(v) else f"cannot at {int(L)}" for L, v in curve.items()]
    return " → ".join(parts)


def _growth(curve: pd.Series) -> float:
    """Loss at the longest length it could evaluate over loss at the shortest; NaN past its table."""
    if curve.empty or curve.isna().iloc[-1] or pd.isna(curve.iloc[0]):
        return np.nan
    return curve.iloc[-1] / curve.iloc[0]


def _growth_reading(choice: Choice, ext: dict[str, pd.Series]) -> str:
    """The claimed value's loss growth over evaluation length against GPT-2's value's (``learned positions``: the
    value as shown, then the group's title), then each reference value's (NoPE: ``reference_only``)."""
    claimed, r = choice.shown(flip_value(choice)), ext[flip_value(choice)]
    L0, L1 = int(r.index[0]), int(r.index[-1])
    g = _growth(r)
    if pd.isna(g):
        return f"{claimed} could not be evaluated at {L1}; nothing to compare."
    text = f"{claimed}'s loss changes {100 * (g - 1):+.1f}% from {L0} to {L1} tokens"
    base, base_curve = f"{choice.shown(choice.gpt2)} {choice.title or choice.group}", ext.get(choice.gpt2)
    if base_curve is not None:
        gb = _growth(base_curve)
        if pd.isna(gb):
            text += f"; {base} cannot be evaluated past their table at all, so {claimed} extends where they cannot"
        elif g < gb:
            text += f", less than {base}' {100 * (gb - 1):+.1f}%: more gracefully, as claimed"
        else:
            text += f", no better than {base}' {100 * (gb - 1):+.1f}%: the claim does not hold here"
    for value, curve in ext.items():
        if choice.registry.traits(value).reference_only and not pd.isna(_growth(curve)):
            gr = _growth(curve)
            text += f"; {choice.shown(value)} {100 * (gr - 1):+.1f}% ({'less' if gr < g else 'more'} than {claimed})"
    return text + "."
