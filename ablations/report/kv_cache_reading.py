"""The reading of ``evidence="kv_cache"`` (attention's claim of a smaller KV cache): the arithmetic at Llama-2-70B,
then the timed flip to fewer KV heads closest to its grouping, its bytes per token and its decode step against the
block it was paired with. The values' names as prose shows them, and the sweep read first, are the declaration's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablations.report.claim_rows import flip_value, sweep_of, variant_row
from ablations.report.formatting import fmt_bytes, fmt_util
from ablations.report.readings import NOT_MEASURED, ratio_text, speed_word, where
from ablations.report.sizes import kv_70b
from ablations.results.row_arch import arch_from_row
from ablations.results.variant_labels import MATCHED
from blockbench import Choice, Claim, choices
from components.flip_configs import llama2_70b_group


def kv_cache(choice: Choice, claim: Claim, table: pd.DataFrame, cmp: pd.DataFrame, quality: pd.DataFrame | None,
             sizes: pd.DataFrame) -> tuple[str, str]:
    """Attention's claim of a smaller KV cache: the arithmetic at Llama-2-70B, then this run's bytes and decode."""
    kv = kv_70b(sizes)
    mha, gqa = choice.shown(choice.gpt2), choice.shown(flip_value(choice))
    arithmetic = (f"Llama-2-70B at {kv['context']:,} tokens fp16 (computed on the meta device): {mha} "
                  f"{kv['mha_gib']:.3g} GiB vs {gqa}-{kv['kv_heads']} {kv['gqa_gib']:.3g} GiB, "
                  f"{kv['ratio']:.3g}× smaller")
    reading = f"The {kv['ratio']:.3g}× cut at 70B is arithmetic and holds"
    r = gqa_row(choice, cmp, sweep_of(choice, claim))
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


def gqa_row(choice: Choice, cmp: pd.DataFrame, sweep: str) -> pd.Series | None:
    """The flip of ``choice`` (attention) to fewer KV heads than query heads closest to Llama-2-70B's 8 query heads per
    KV head (MQA only when nothing else ran), from ``sweep`` where it has one."""
    if cmp.empty:
        return None
    others = [o for o in choices() if o.group != choice.group]
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
