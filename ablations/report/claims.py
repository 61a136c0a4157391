"""The claims table: each declared claim, what this run measured, the published figure, and a reading.

Readings are composed from the numbers, never typed in: a ratio reads "slower" or "faster" only where its 95%
interval (the one the tables print) excludes 1 and clears the baseline's own A/A interval, and a loss reads from its
verdict at the interval's Holm level. The claims, their published figures (each with its source) and the evidence
each is read from are the choices' declarations (``components.choice.Claim``: ``evidence``, ``performs``, ``why``,
``sweep``). There is one reading per kind of evidence (here: ``flip``, ``speed``, ``per_flop``, ``stability``;
``extrapolation_reading``, ``kv_cache_reading``), and none names a group, value or sweep: what a reading needs of a
group (its values, how prose shows them, the sweep its rows come from first) is read from the declaration, so a new
group's claim gets its row from its declaration alone. The rows a reading reads are ``claim_rows``', its words
``readings``'.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablations.report.claim_rows import flip_value, flip_variant, quality_of, sweep_of, variant_row
from ablations.report.extrapolation_reading import extrapolation, extrapolation_against_baseline
from ablations.report.flip_sets import flip_labels
from ablations.report.formatting import fmt_bytes
from ablations.report.kv_cache_reading import kv_cache
from ablations.report.readings import (
    NOT_MEASURED,
    against,
    detectable,
    quality_reading,
    quality_text,
    ratio_text,
    speed_cost,
    speed_word,
    verdict,
    where,
)
from ablations.report.verdicts import at_settled_horizon
from blockbench import Choice, Claim, choices
from components.baselines import BASELINES


def claims_table(table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
                 sizes: pd.DataFrame, worth: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per declared claim: claim, measured here, published (with source), reading. With the multipliers
    (``worth``) a horizon sweep is read where the verdicts read it (``verdicts.at_settled_horizon``), never at
    whichever of its lengths comes first.

    The claim, its published figures and its evidence are the choice's declaration: a group's claim is read by
    ``READINGS[claim.evidence]``, a value's (``value_claims``) by ``VALUE_READINGS[claim.evidence]``, else from the
    value's flip."""
    if worth is not None:
        reading = at_settled_horizon(table, quality, worth)
        table, quality = reading.table, reading.summary
    rows = []
    for choice in choices():
        claims = [(choice.claim, None)] if choice.claim is not None else []
        claims += [(claim, value) for value, claim in choice.value_claims.items()]
        for claim, value in claims:
            if value is None:
                measured, reading = READINGS[claim.evidence](choice, claim, table, cmp, quality, sizes)
            else:
                read = VALUE_READINGS.get(claim.evidence, value_evidence)
                measured, reading = read(choice, claim, value, table, cmp, quality, sizes)
            rows.append({
                "claim": claim.text,
                "measured in this run": measured,
                "published": "; ".join(f"{fig} ({src})" for src, fig in claim.published),
                "reading": reading,
            })
    return pd.DataFrame(rows, columns=["claim", "measured in this run", "published", "reading"])


# --- one reading per kind of evidence (``components.choice.EVIDENCE``): (measured, reading) --------------

def speed(choice: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
          sizes: pd.DataFrame) -> tuple[str, str]:
    """A claim of lower cost: the flip's forward and train time against its baseline's, then its loss."""
    variant, sweep = flip_variant(choice), sweep_of(choice, claim)
    r = variant_row(cmp, variant, sweep)
    q = quality_of(quality, variant, sweep if r is None else r["sweep"])
    if r is None and q is None:
        return NOT_MEASURED, NOT_MEASURED + f" (no `{variant}` variant in the table)."
    measured, reading = speed_cost(r)
    return f"{measured}; {quality_text(q)}", f"{reading}. Quality: {quality_reading(q, _performs(claim))}."


def _performs(claim: Claim, default: str = "as well as without it") -> str:
    return claim.performs or default


def per_flop(choice: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
             sizes: pd.DataFrame) -> tuple[str, str]:
    """A claim of quality per FLOP: the flip's loss against GPT-2's value beside its FLOPs, parameters and time."""
    base = choice.shown(choice.gpt2)
    variant, sweep = flip_variant(choice), sweep_of(choice, claim)
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


def flip(choice: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
         sizes: pd.DataFrame) -> tuple[str, str]:
    """Any declared choice: its flip's cost against the GPT-2 block and its validation loss, read from the numbers."""
    return flip_evidence(choice, cmp, quality, _performs(claim), claim.why, sweep=sweep_of(choice, claim))


def _kv_text(r: pd.Series) -> str:
    """The KV cache beside the baseline's, where the flip moved it (a window, a latent cache)."""
    ratio = r.get("kv_per_token_ratio", np.nan)
    if pd.isna(ratio) or abs(ratio - 1) < 0.005:
        return ""
    ctx = "" if pd.isna(r["decode_ctx"]) else f" at context {int(r['decode_ctx']):,}"
    return f"; KV cache {fmt_bytes(r['kv_per_token'])}/token{ctx}, {ratio:.3g}× {against(r)}"


def stability(choice: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
              sizes: pd.DataFrame) -> tuple[str, str]:
    """Cost and loss as any flip; then what this scale can say about the claim, which is about stability."""
    measured, reading = flip(choice, claim, table, cmp, quality, sizes)
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
                          f"{choice.shown(flip_value(choice))}'s cost and its loss at a stable setting, not the "
                          "stability claim.")
    return measured, (reading + f" Stability: {diverged} of {runs} quality runs in this report diverged (the quality "
                      f"table says which). {target}; a divergence at this scale is not that instability.")


def value_evidence(choice: Choice, claim: Claim, value: str, table: pd.DataFrame, cmp: pd.DataFrame,
                   quality: pd.DataFrame | None, sizes: pd.DataFrame) -> tuple[str, str]:
    """A claim about a value other than Llama-2's (or a setting flip): its flip on Llama-2's block where the run has
    ``+sweep=modern``, else on GPT-2's, against the block it was paired with."""
    return flip_evidence(choice, cmp, quality, _performs(claim, "as well as the block without it"), claim.why,
                         variants=flip_labels(choice, value), sweep=sweep_of(choice, claim))


def flip_evidence(choice: Choice, cmp: pd.DataFrame, quality: pd.DataFrame | None, performs: str,
                  why: str = "", variants: list[str] | None = None, sweep: str | None = None) -> tuple[str, str]:
    """(measured, reading) of ``choice``'s flip (the first of ``variants`` the run measured, default
    ``flip_variant(choice)``, else its flip on Llama-2's block), from ``sweep`` (default: ``choice``'s own) where it
    has it: parameters, forward/train/decode ratios and the loss against the block it was paired with; ``why`` follows
    the cost reading (``{params}``: the parameters)."""
    variants = variants or flip_labels(choice, flip_value(choice))
    sweep = sweep or choice.group
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
    return f"{cost}; {quality_text(q)}", f"{saving}. Quality: {quality_reading(q, performs)}."


# A group's claim, by the evidence it declares (``components.choice.EVIDENCE``: every name has its reading).
READINGS = {"flip": flip, "speed": speed, "per_flop": per_flop, "extrapolation": extrapolation, "kv_cache": kv_cache,
            "stability": stability}
# A value's claim (``value_claims``), by its evidence; any other is read from the value's flip (``value_evidence``).
VALUE_READINGS = {"flip": value_evidence, "extrapolation": extrapolation_against_baseline}
