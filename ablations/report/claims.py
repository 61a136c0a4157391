"""The claims table: each declared claim, what this run measured, the published figure, and a reading.

Readings are composed from the numbers, never typed in: a ratio reads "slower" or "faster" only where its 95%
interval (the one the tables print) excludes 1 and clears the baseline's own A/A interval, and a loss reads from its
verdict at the interval's Holm level. The claims, their published figures (each with its source) and the evidence
each is read from are the choices' declarations (``components.choice.Claim``: ``evidence``, ``performs``, ``why``,
``sweep``); this module has one reading per kind of evidence and names no group, value or sweep: what a reading needs
of a group (its values, how prose shows them, the sweep its rows come from first) is read from the declaration, so
a new group's claim gets its row from its declaration alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablations.config.variants import BASELINES, MATCHED, arch_from_row, flip_labels, llama2_70b_group
from ablations.report.formatting import fmt_bytes, fmt_p, fmt_util, fmt_verdict, is_true
from ablations.report.sizes import kv_70b
from components import Choice, Claim, choices

NOT_MEASURED = "not measured in this run"


def claims_table(table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
                 sizes: pd.DataFrame) -> pd.DataFrame:
    """One row per declared claim: claim, measured here, published (with source), reading.

    The claim, its published figures and its evidence are the choice's declaration: a group's claim is read by
    ``READINGS[claim.evidence]``, a value's (``value_claims``) by ``VALUE_READINGS[claim.evidence]``, else from the
    value's flip."""
    rows = []
    for c in choices():
        claims = [(c.claim, None)] if c.claim is not None else []
        claims += [(claim, value) for value, claim in c.value_claims.items()]
        for claim, value in claims:
            if value is None:
                measured, reading = READINGS[claim.evidence](c, claim, table, cmp, quality, sizes)
            else:
                read = VALUE_READINGS.get(claim.evidence, value_evidence)
                measured, reading = read(c, claim, value, table, cmp, quality, sizes)
            rows.append({
                "claim": claim.text,
                "measured in this run": measured,
                "published": "; ".join(f"{fig} ({src})" for src, fig in claim.published),
                "reading": reading,
            })
    return pd.DataFrame(rows, columns=["claim", "measured in this run", "published", "reading"])


def flip_value(c: Choice) -> str:
    """The value a group's claim is about: Llama-2's, else the first value GPT-2's block is flipped to."""
    return c.llama2 if c.in_llama2 else c.flips[0]


def flip_variant(c: Choice) -> str:
    """The variant that moves ``c`` alone from GPT-2's block to ``flip_value(c)``."""
    return c.value_name(flip_value(c))


def sweep_of(c: Choice, claim: Claim) -> str:
    """The sweep a claim's rows are read from first: the one it declares, else its group's own."""
    return claim.sweep or c.group


# --- evidence helpers ---------------------------------------------------------------------------------

def variant_row(cmp: pd.DataFrame, variant: str | list[str] | None = None, sweep: str | None = None,
                rows: pd.DataFrame | None = None) -> pd.Series | None:
    """The comparison row of a one-choice flip, from its own sweep when the run has it; of several variants, the
    first the run measured."""
    if cmp.empty:
        return None
    if isinstance(variant, list):
        found = (variant_row(cmp, v, sweep) for v in variant)
        return next((r for r in found if r is not None), None)
    cand = rows if rows is not None else cmp[cmp["variant"] == variant]
    cand = cand[cand["fwd"].notna() | cand["decode"].notna() | cand["fwd_flops"].notna()]
    if cand.empty:
        return None
    own = cand[cand["sweep"] == sweep]
    return (own if not own.empty else cand).iloc[0]


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
    return f"{r['device']}, {r['dtype']}, {'compiled' if is_true(r['compile']) else 'eager'}, sweep `{r['sweep']}`"


def against(r: pd.Series) -> str:
    """Whose time a ratio divides by: the block the row's point was paired with."""
    return f"`{r.get('baseline', 'gpt2')}`'s"


def quality_of(quality: pd.DataFrame | None, variant: str, sweep: str, metric: str = "val_loss") -> dict | None:
    """``variant``'s row of ``ablations.quality.stats.summarize`` against its sweep's baseline block (GPT-2's or
    Llama-2's: ``reference`` names it), from its sweep."""
    if quality is None or quality.empty:
        return None
    q = quality[(quality["variant"] == variant) & (quality["metric"] == metric)]
    if "reference" in q:
        q = q[q["reference"].isin(BASELINES)]
    if (q["sweep"] == sweep).any():
        q = q[q["sweep"] == sweep]
    if q.empty or pd.isna(q["mean"].iloc[0]):
        return None
    return q.iloc[0].to_dict()


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
    return q["verdict"].lower() if q is not None and isinstance(q["verdict"], str) else None


# --- one reading per kind of evidence (``components.choice.EVIDENCE``): (measured, reading) --------------

def speed(c: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
          sizes: pd.DataFrame) -> tuple[str, str]:
    """A claim of lower cost: the flip's forward and train time against its baseline's, then its loss."""
    variant, sweep = flip_variant(c), sweep_of(c, claim)
    r = variant_row(cmp, variant, sweep)
    q = quality_of(quality, variant, sweep if r is None else r["sweep"])
    if r is None and q is None:
        return NOT_MEASURED, NOT_MEASURED + f" (no `{variant}` variant in the table)."
    measured, reading = _speed_cost(r)
    return f"{measured}; {quality_text(q)}", f"{reading}. Quality: {_quality_reading(q, _performs(claim))}."


def _performs(claim: Claim, default: str = "as well as without it") -> str:
    return claim.performs or default


def _speed_cost(r: pd.Series | None) -> tuple[str, str]:
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


def _quality_reading(q: dict | None, claim: str) -> str:
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


def per_flop(c: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
             sizes: pd.DataFrame) -> tuple[str, str]:
    """A claim of quality per FLOP: the flip's loss against GPT-2's value beside its FLOPs, parameters and time."""
    base = c.shown(c.gpt2)
    variant, sweep = flip_variant(c), sweep_of(c, claim)
    r = variant_row(cmp, variant, sweep)
    q = quality_of(quality, variant, sweep if r is None else r["sweep"])
    if r is None and q is None:
        return NOT_MEASURED, NOT_MEASURED + f" (no `{variant}` variant in the table)."
    flops = np.nan if r is None else r["fwd_flops_ratio"]
    flops_txt = f"{flops:.3f}× the baseline's FLOPs" if not pd.isna(flops) else "FLOPs not compared"
    if r is None:
        cost = f"cost {NOT_MEASURED}"
    else:
        pct = r["params_delta"] / r["params_baseline"] if r["params_baseline"] else np.nan
        params_txt = "parameters not compared" if pd.isna(pct) else f"parameters {100 * pct:+.2f}%"
        cost = (f"{flops_txt}, {params_txt}, forward {ratio_text(r, 'fwd')}, train {ratio_text(r, 'train')} of its "
                f"time at {r['shape']} ({where(r)})")
    v = verdict(q)
    if v is None:
        fwd = "" if r is None else f", forward {speed_word(r, 'fwd')}"
        reading = f"Perplexity {NOT_MEASURED} (no quality rows), so per-FLOP quality is open; its cost here: "
        reading += f"{flops_txt}{fwd}."
    elif "better" in v:
        at_flops = ("at no more FLOPs" if not pd.isna(flops) and flops <= 1.005 else
                    "(FLOPs not compared in this run)" if pd.isna(flops) else f"at {flops:.3f}× the FLOPs")
        reading = f"Better validation loss than {base} {at_flops}: consistent with the claim at this scale."
    elif "worse" in v:
        reading = f"Worse validation loss than {base} here: this run contradicts the claim at its scale and budget."
    elif "no detectable" in v:
        reading = (f"No detectable loss difference at this scale and budget{detectable(q)}: the claim is neither "
                   "confirmed nor refuted here (more seeds or steps would narrow the interval).")
    else:
        reading = f"Validation loss verdict against {base}: {v}; per-FLOP quality is open."
    return f"{cost}; {quality_text(q)}", reading


def extrapolation(c: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
                  sizes: pd.DataFrame) -> tuple[str, str]:
    """A position scheme's claim to extend past its training length: every scheme's loss by evaluation length."""
    ext = extrapolation_evidence(c, table, sweep_of(c, claim))
    r = variant_row(cmp, flip_variant(c), sweep_of(c, claim))
    speed_txt = f"; its cost: forward {speed_word(r, 'fwd')} at {r['shape']}" if r is not None else ""
    if ext is None:
        return NOT_MEASURED + " (no extrapolation rows)" + speed_txt, NOT_MEASURED + "."
    measured = "; ".join(f"{v}: {_curve_text(curve)}" for v, curve in ext.items()) + speed_txt
    return measured, _growth_reading(c, ext)


def extrapolation_evidence(c: Choice, table: pd.DataFrame, sweep: str | None = None) -> dict[str, pd.Series] | None:
    """Per variant of a one-choice comparison of ``c`` (the GPT-2 block and each flip of ``c``), mean loss by
    evaluation length (NaN = cannot), keyed by ``c``'s value; from ``sweep`` (default: ``c``'s own) where it has the
    claimed value's rows. None without the claimed value's rows (``flip_value``)."""
    names = {("gpt2" if v == c.gpt2 else c.value_name(v)): v for v in c.values}
    rows = table[(table["metric"] == "extrap_loss") & (table["status"].fillna("ok") == "ok")]
    rows = rows[rows["variant"].isin(names)]
    claimed = flip_variant(c)
    if rows.empty or not (rows["variant"] == claimed).any():
        return None
    own = rows[rows["sweep"] == (sweep or c.group)]
    rows = own if (own["variant"] == claimed).any() else rows
    return {names[v]: g.groupby("seq_len")["value"].mean().sort_index() for v, g in rows.groupby("variant")}


def extrapolation_against_baseline(c: Choice, claim: Claim, value: str, table: pd.DataFrame, cmp: pd.DataFrame,
                                   quality: pd.DataFrame | None, sizes: pd.DataFrame) -> tuple[str, str]:
    """A position scheme's loss by evaluation length beside its baseline's (the block it was paired with: RoPE in
    Llama-2's, learned positions in GPT-2's), from the first of its flips the run trained."""
    rows = table[(table["metric"] == "extrap_loss") & (table["status"].fillna("ok") == "ok")]
    for variant in flip_labels(c, value):
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
        base_value = c.shown(getattr(arch_from_row(base.iloc[0]), c.group).name)
        bcurve = base.groupby("seq_len")["value"].mean().sort_index()
        measured += f"; `{base_name}` ({base_value}): {_curve_text(bcurve)} (sweep `{sweep}`)"
        g, gb = _growth(curve), _growth(bcurve)
        L0, L1 = int(curve.index[0]), int(curve.index[-1])
        shown = c.shown(value)
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


def _growth_reading(c: Choice, ext: dict[str, pd.Series]) -> str:
    """The claimed value's loss growth over evaluation length against GPT-2's value's (``learned positions``: the
    value as shown, then the group's title), then each reference value's (NoPE: ``reference_only``)."""
    claimed, r = c.shown(flip_value(c)), ext[flip_value(c)]
    L0, L1 = int(r.index[0]), int(r.index[-1])
    g = _growth(r)
    if pd.isna(g):
        return f"{claimed} could not be evaluated at {L1}; nothing to compare."
    text = f"{claimed}'s loss changes {100 * (g - 1):+.1f}% from {L0} to {L1} tokens"
    base, base_curve = f"{c.shown(c.gpt2)} {c.title or c.group}", ext.get(c.gpt2)
    if base_curve is not None:
        gb = _growth(base_curve)
        if pd.isna(gb):
            text += f"; {base} cannot be evaluated past their table at all, so {claimed} extends where they cannot"
        elif g < gb:
            text += f", less than {base}' {100 * (gb - 1):+.1f}%: more gracefully, as claimed"
        else:
            text += f", no better than {base}' {100 * (gb - 1):+.1f}%: the claim does not hold here"
    for value, curve in ext.items():
        if c.registry.traits(value).reference_only and not pd.isna(_growth(curve)):
            gr = _growth(curve)
            text += f"; {c.shown(value)} {100 * (gr - 1):+.1f}% ({'less' if gr < g else 'more'} than {claimed})"
    return text + "."


def kv_cache(c: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
             sizes: pd.DataFrame) -> tuple[str, str]:
    """Attention's claim of a smaller KV cache: the arithmetic at Llama-2-70B, then this run's bytes and decode."""
    kv = kv_70b(sizes)
    mha, gqa = c.shown(c.gpt2), c.shown(flip_value(c))
    arithmetic = (f"Llama-2-70B at {kv['context']:,} tokens fp16 (computed on the meta device): {mha} "
                  f"{kv['mha_gib']:.3g} GiB vs {gqa}-{kv['kv_heads']} {kv['gqa_gib']:.3g} GiB, "
                  f"{kv['ratio']:.3g}× smaller")
    reading = f"The {kv['ratio']:.3g}× cut at 70B is arithmetic and holds"
    r = gqa_row(c, cmp, sweep_of(c, claim))
    if r is None:
        return arithmetic + f"; no {gqa} variant timed in this run", reading + f"; long-context decode {NOT_MEASURED}."
    group = int(r["n_heads"]) // int(r["n_kv_heads"])
    kv_txt = (f"KV {fmt_bytes(r['kv_per_token'])}/token ({1 / r['kv_per_token_ratio']:.3g}× smaller than {mha})"
              if not pd.isna(r["kv_per_token_ratio"]) else f"KV {fmt_bytes(r['kv_per_token'])}/token")
    decode = ratio_text(r, "decode")
    ctx = "" if pd.isna(r["decode_ctx"]) else f" at context {int(r['decode_ctx']):,}, batch {int(r['decode_batch'])}"
    measured = (f"{arithmetic}. This run, `{r['variant']}` ({int(r['n_kv_heads'])} KV heads for {int(r['n_heads'])}"
                f" query heads): {kv_txt}; decode step {decode} of {mha}'s time{ctx} ({where(r)})"
                f"{_bytes_and_kernels(r, mha)}")
    word = speed_word(r, "decode")
    if word == "not timed":
        reading += f"; long-context decode speed {NOT_MEASURED}."
    else:
        reading += f"; here ({group} query heads per KV head) one decode step{ctx} against {mha}: {word}."
    return measured, reading


def _bytes_and_kernels(r: pd.Series, mha: str) -> str:
    """What the design cut (a decode step's bytes, its roofline ratio) and what this machine made of it, against
    ``mha`` (the baseline's attention, as shown)."""
    if pd.isna(r.get("decode_bytes_ratio", np.nan)):
        return ""
    text = (f". What the design cut: the step moves {r['decode_bytes_ratio']:.2f}× {mha}'s bytes "
            f"({fmt_bytes(r['decode_bytes'])})")
    if not pd.isna(r.get("decode_roofline", np.nan)):
        text += f", a roofline ratio of {r['decode_roofline']:.2f}×"
    if not pd.isna(r.get("decode_bw_util", np.nan)) and not pd.isna(r["decode"]):
        text += (f"; what this machine's kernels made of it: {r['decode']:.2f}× the time, at "
                 f"{fmt_util(r['decode_bw_util'])} of the measured bandwidth against {mha}'s "
                 f"{fmt_util(r['decode_bw_util_baseline'])}")
    return text


def gqa_row(c: Choice, cmp: pd.DataFrame, sweep: str) -> pd.Series | None:
    """The flip of ``c`` (attention) to fewer KV heads than query heads closest to Llama-2-70B's 8 query heads per KV
    head (MQA only when nothing else ran), from ``sweep`` where it has one."""
    if cmp.empty:
        return None
    others = [o for o in choices() if o.group != c.group]
    on_gpt2 = cmp.apply(lambda r: all(o.has(arch_from_row(r), o.gpt2) for o in others), axis=1)
    flips = cmp[on_gpt2.astype(bool) & (cmp["n_kv_heads"] < cmp["n_heads"])]
    if flips.empty:
        return None
    group = flips["n_heads"] // flips["n_kv_heads"]
    # Prefer a timed, plain GQA flip (a parameter-matched one widens the FFN too), then 8 query heads per KV head.
    matched = flips["variant"].astype(str).str.contains(MATCHED, regex=False)
    target = llama2_70b_group()
    score = (flips["n_kv_heads"] == 1) * 1000 + matched * 100 + (group - target).abs() - flips["decode"].notna() * 0.5
    best = flips.assign(score=score).sort_values("score")
    own = best[best["sweep"] == sweep]
    return variant_row(cmp, rows=own if not own.empty else best)


def flip(c: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
         sizes: pd.DataFrame) -> tuple[str, str]:
    """Any declared choice: its flip's cost against the GPT-2 block and its validation loss, read from the numbers."""
    return flip_evidence(c, cmp, quality, _performs(claim), claim.why, sweep=sweep_of(c, claim))


def _kv_text(r: pd.Series) -> str:
    """The KV cache beside the baseline's, where the flip moved it (a window, a latent cache)."""
    ratio = r.get("kv_per_token_ratio", np.nan)
    if pd.isna(ratio) or abs(ratio - 1) < 0.005:
        return ""
    ctx = "" if pd.isna(r["decode_ctx"]) else f" at context {int(r['decode_ctx']):,}"
    return f"; KV cache {fmt_bytes(r['kv_per_token'])}/token{ctx}, {ratio:.3g}× {against(r)}"


def stability(c: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
              sizes: pd.DataFrame) -> tuple[str, str]:
    """Cost and loss as any flip; then what this scale can say about the claim, which is about stability."""
    measured, reading = flip(c, claim, table, cmp, quality, sizes)
    if quality is None or quality.empty or "diverged" not in quality:
        return measured, reading + " Stability: no quality runs, nothing to say."
    finals = quality[(quality["metric"] == "val_loss") & quality["reference"].isin(BASELINES)]
    runs = int(finals["n"].fillna(0).sum() + finals["diverged"].fillna(0).sum())
    diverged = int(finals["diverged"].fillna(0).sum())
    target = ("The instability it targets (attention logits growing until softmax is one-hot) was reported at billions "
              "of parameters or at learning rates far above this harness's")
    if diverged == 0:
        return measured, (reading + f" Stability: none of the {runs} quality runs in this report diverged. {target}; "
                          f"at this scale and learning rate every block trains stably, so this run measures "
                          f"{c.shown(flip_value(c))}'s cost and its loss at a stable setting, not the stability "
                          "claim.")
    return measured, (reading + f" Stability: {diverged} of {runs} quality runs in this report diverged (the quality "
                      f"table says which). {target}; a divergence at this scale is not that instability.")


def value_evidence(c: Choice, claim: Claim, value: str, table: pd.DataFrame, cmp: pd.DataFrame,
                   quality: pd.DataFrame | None, sizes: pd.DataFrame) -> tuple[str, str]:
    """A claim about a value other than Llama-2's (or a setting flip): its flip on Llama-2's block where the run has
    ``+sweep=modern``, else on GPT-2's, against the block it was paired with."""
    return flip_evidence(c, cmp, quality, _performs(claim, "as well as the block without it"), claim.why,
                         variants=flip_labels(c, value), sweep=sweep_of(c, claim))


def flip_evidence(c: Choice, cmp: pd.DataFrame, quality: pd.DataFrame | None, performs: str,
                  why: str = "", variants: list[str] | None = None, sweep: str | None = None) -> tuple[str, str]:
    """(measured, reading) of ``c``'s flip (the first of ``variants`` the run measured, default ``flip_variant(c)``,
    else its flip on Llama-2's block), from ``sweep`` (default: ``c``'s own) where it has it: parameters,
    forward/train/decode ratios and the loss against the block it was paired with; ``why`` follows the cost reading
    (``{params}``: the parameters)."""
    variants = variants or flip_labels(c, flip_value(c))
    sweep = sweep or c.group
    r = variant_row(cmp, variants, sweep)
    variant = variants[0] if r is None else str(r["variant"])
    if r is None:
        found = (v for v in variants if quality_of(quality, v, sweep) is not None)
        variant = next(found, variants[0])
    q = quality_of(quality, variant, sweep if r is None else r["sweep"])
    if r is None and q is None:
        return NOT_MEASURED, NOT_MEASURED + f" (no {' or '.join(f'`{v}`' for v in variants)} variant in the table)."
    if r is None:
        cost, saving = f"cost {NOT_MEASURED}", f"Cost {NOT_MEASURED}"
    else:
        pct = r["params_delta"] / r["params_baseline"] if r["params_baseline"] else np.nan
        params = "parameters not compared" if pd.isna(pct) else f"parameters {100 * pct:+.3f}%"
        cost = (f"{params}, forward {ratio_text(r, 'fwd')}, train {ratio_text(r, 'train')} of {against(r)} time "
                f"at {r['shape']}, decode {ratio_text(r, 'decode')} ({where(r)}){_kv_text(r)}")
        saving = (f"Cost: forward {speed_word(r, 'fwd')}, forward+backward {speed_word(r, 'train')}, decode "
                  f"{speed_word(r, 'decode')} here" + why.format(params=params))
    return f"{cost}; {quality_text(q)}", f"{saving}. Quality: {_quality_reading(q, performs)}."


# A group's claim, by the evidence it declares (``components.choice.EVIDENCE``: every name has its reading).
READINGS = {"flip": flip, "speed": speed, "per_flop": per_flop, "extrapolation": extrapolation, "kv_cache": kv_cache,
            "stability": stability}
# A value's claim (``value_claims``), by its evidence; any other is read from the value's flip (``value_evidence``).
VALUE_READINGS = {"flip": value_evidence, "extrapolation": extrapolation_against_baseline}
