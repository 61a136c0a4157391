"""The words of a reading, composed from the numbers, never typed in: a ratio reads "slower" or "faster" only where its
95% interval (the one the tables print) excludes 1 and clears the baseline's own A/A interval; a ratio is written with
that interval, a loss with its interval, its difference from the baseline at its Holm level and its verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablations.report.formatting import fmt_p, fmt_verdict, is_true

NOT_MEASURED = "not measured in this run"


def speed_word(r: pd.Series, key: str) -> str:
    """Slower or faster only when the ratio's 95% interval (the one the tables print) excludes 1 and clears the
    baseline's own A/A interval; else no measurable difference, with the interval. A table without the interval
    (written before it) gets no reading."""
    v, lo, hi = r[key], r.get(f"{key}_ci_lo", np.nan), r.get(f"{key}_ci_hi", np.nan)
    if pd.isna(v):
        return "not timed"
    if pd.isna(lo) or pd.isna(hi):
        return f"not judged ({v:.2f}×: no 95% interval in this table)"
    aa_lo, aa_hi = r.get(f"{key}_aa_ci_lo", np.nan), r.get(f"{key}_aa_ci_hi", np.nan)
    floor_lo = 1.0 if pd.isna(aa_lo) else min(1.0, aa_lo)
    floor_hi = 1.0 if pd.isna(aa_hi) else max(1.0, aa_hi)
    if lo > floor_hi:
        return f"slower ({v:.2f}× [{lo:.2f}, {hi:.2f}])"
    if hi < floor_lo:
        return f"faster ({v:.2f}× [{lo:.2f}, {hi:.2f}])"
    noise = "" if pd.isna(aa_lo) else f" or the baseline's A/A interval [{aa_lo:.2f}, {aa_hi:.2f}]"
    return f"no measurable difference ({v:.2f}× [{lo:.2f}, {hi:.2f}] overlaps 1{noise})"


def ratio_text(r: pd.Series, key: str) -> str:
    """The ratio with its 95% interval in brackets; a table without the interval gives its rounds' spread, named."""
    v, lo, hi = r[key], r.get(f"{key}_ci_lo", np.nan), r.get(f"{key}_ci_hi", np.nan)
    if pd.isna(v):
        return "—"
    if not (pd.isna(lo) or pd.isna(hi)):
        return f"{v:.2f}× [{lo:.2f}, {hi:.2f}]"
    p25, p75 = r.get(f"{key}_lo", np.nan), r.get(f"{key}_hi", np.nan)
    return f"{v:.2f}× (spread p25–p75 {p25:.2f}–{p75:.2f})" if not (pd.isna(p25) or pd.isna(p75)) else f"{v:.2f}×"


def where(r: pd.Series) -> str:
    """Where a comparison row was measured: device, dtype, compiled or eager, and its sweep."""
    return f"{r['device']}, {r['dtype']}, {'compiled' if is_true(r['compile']) else 'eager'}, sweep `{r['sweep']}`"


def against(r: pd.Series) -> str:
    """Whose time a ratio divides by: the block the row's point was paired with."""
    return f"`{r.get('baseline', 'gpt2')}`'s"


def quality_text(q: dict | None) -> str:
    if q is None:
        return "validation loss not measured"
    text = f"val loss {q['mean']:.4f}"
    if not (pd.isna(q["ci_lo"]) or pd.isna(q["ci_hi"])):
        text += f" [95% CI {q['ci_lo']:.4f}, {q['ci_hi']:.4f}]"
    text += f" {q['unit']}" if isinstance(q.get("unit"), str) else ""
    if not pd.isna(q["diff"]):
        text += f", Δ vs `{q.get('reference', 'gpt2')}` {q['diff']:+.4f}"
        if not (pd.isna(q["diff_lo"]) or pd.isna(q["diff_hi"])):
            level = q.get("alpha_adjusted", np.nan)
            text += f" [{q['diff_lo']:+.4f}, {q['diff_hi']:+.4f}]"
            text += "" if pd.isna(level) else f" (its Holm level, {100 * (1 - level):.3g}%)"
        if not pd.isna(q.get("p_holm", np.nan)):
            text += f", Holm p {fmt_p(q['p_holm'])}"
    if isinstance(q["verdict"], str):
        text += f" ({fmt_verdict(q['verdict'], q.get('mde', np.nan), q.get('mde_note'))})"
    return text


def detectable(q: dict | None) -> str:
    """`` (this run could have detected |d| >= 0.04 at 80% power)``, or nothing where no MDE exists."""
    mde = np.nan if q is None else q.get("mde", np.nan)
    return "" if pd.isna(mde) else f" (this run could have detected |d| >= {mde:.2g} at 80% power)"


def verdict(q: dict | None) -> str | None:
    """A quality summary's verdict in lower case, or None where it has none."""
    return q["verdict"].lower() if q is not None and isinstance(q["verdict"], str) else None


def speed_cost(r: pd.Series | None) -> tuple[str, str]:
    """(measured, reading) of a claim of lower cost: a flip's forward and train ratios against its baseline's."""
    if r is None:
        return f"cost {NOT_MEASURED}", f"Cost {NOT_MEASURED}"
    measured = (f"forward {ratio_text(r, 'fwd')}, train {ratio_text(r, 'train')} of {against(r)} time at "
                f"{r['shape']} ({where(r)})")
    train, fwd = speed_word(r, "train"), speed_word(r, "fwd")
    if train == fwd == "not timed":
        return measured, f"Cost {NOT_MEASURED} (timing was skipped)"
    # No cause is given: none of this run's rows measures why (a profile would).
    reading = f"Cost: forward {fwd}, forward+backward {train} here"
    if train.startswith("slower") or fwd.startswith("slower"):
        return measured, reading + ", the opposite of the claim"
    if train.startswith("faster"):
        return measured, reading + ", the lower cost the papers report"
    return measured, reading


def quality_reading(q: dict | None, claim: str) -> str:
    """What a flip's loss verdict says of the claim that it performs ``claim`` ("as well as LayerNorm")."""
    v = verdict(q)
    if v is None:
        return NOT_MEASURED
    if "no detectable" in v:
        return f"no detectable difference in validation loss{detectable(q)}, consistent with 'performs {claim}'"
    if "better" in v:
        return "better validation loss than the baseline"
    if "worse" in v:
        return f"worse validation loss than the baseline, against 'performs {claim}'"
    return f"validation loss verdict: {v}"
