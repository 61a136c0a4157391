"""The timing sections' tables, built from the comparison: formatted cells, no prose."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ablations.config.columns import cell
from ablations.report.formatting import (
    fmt_bytes,
    fmt_count,
    fmt_flops_executed,
    fmt_params_delta,
    fmt_precision,
    fmt_quartiles,
    fmt_rate,
    fmt_ratio_with,
    fmt_spread,
    fmt_util,
    fmt_with_quartiles,
    fmt_x,
    is_true,
    markdown_table,
)
from ablations.report.tables import with_intervals
from blockbench import choices

log = logging.getLogger("ablations")


def variants_table(s: pd.DataFrame) -> str:
    """What each variant of a sweep is: every declared choice and its embeddings, from its own rows (the names are
    derived from the same values, so the table is what a reader checks a name against)."""
    first = s.drop_duplicates("variant")
    tied = first.get("tie_embeddings", pd.Series(np.nan, index=first.index))  # absent from a table without the column
    cells = {choice.title or choice.group: [cell(choice, r) for _, r in first.iterrows()] for choice in choices()}
    # A choice neither GPT-2 nor Llama-2 varies gets a column only in a sweep that moves it.
    cells = {t: v for (t, v), choice in zip(cells.items(), choices(), strict=True)
             if choice.in_llama2 or set(v) != {choice.gpt2}}
    return markdown_table(pd.DataFrame({
        "variant": first["variant"],
        **cells,
        "embeddings (quality model)": tied.map(lambda t: "—" if pd.isna(t) else "tied" if is_true(t) else "untied"),
    }))


def headline_cells(frame: pd.DataFrame, key: str) -> list[str]:
    """A headline ratio per row: median with its 95% interval; a table written before the interval rows gives the
    quartiles instead, marked ``(p25–p75)`` so the two are never read as the same thing."""
    if f"{key}_ci_lo" not in frame:
        frame = frame.assign(**{f"{key}_ci_lo": np.nan, f"{key}_ci_hi": np.nan})
    return [fmt_spread(v, ci_lo, ci_hi) if not (pd.isna(ci_lo) or pd.isna(ci_hi)) else fmt_with_quartiles(v, lo, hi)
            for v, ci_lo, ci_hi, lo, hi in
            frame[[key, f"{key}_ci_lo", f"{key}_ci_hi", f"{key}_lo", f"{key}_hi"]].to_numpy()]


def speed_table(cmp: pd.DataFrame) -> str:
    shape = cmp["shape"].iloc[0]
    decode = "decode ×" if cmp["decode_ctx"].isna().all() else (
        f"decode × (B={int(cmp['decode_batch'].iloc[0])}, context {int(cmp['decode_ctx'].iloc[0]):,})")
    columns = {
        "variant": cmp["case"],
        f"forward × ({shape})": headline_cells(cmp, "fwd"),
        f"train × ({shape})": headline_cells(cmp, "train"),
        "forward tokens/s": cmp["fwd_tps"].map(fmt_rate),
        "train tokens/s": cmp["train_tps"].map(fmt_rate),
        decode: headline_cells(cmp, "decode"),
        "decode ms/step": cmp["decode_s"].map(lambda s: "—" if pd.isna(s) else f"{1e3 * s:.3g}"),
    }
    # How precise each ratio turned out (its 95% interval's half-width, the rounds it took; ‡ stopped on its round
    # budget short of the target), and the spread of its rounds: absent from tables written before the interval rows.
    for key, name in (("fwd", "forward"), ("train", "train"), ("decode", "decode")):
        if f"{key}_ci" in cmp and cmp[f"{key}_ci"].notna().any():
            columns[f"{name} ±95% (rounds)"] = [fmt_precision(*v) for v in
                                                cmp[[f"{key}_ci", f"{key}_rounds", f"{key}_budget"]].to_numpy()]
            columns[f"{name} rounds p25–p75"] = [fmt_quartiles(lo, hi) for lo, hi in
                                                 cmp[[f"{key}_lo", f"{key}_hi"]].to_numpy()]
    return markdown_table(pd.DataFrame(columns))


def work_table(cmp: pd.DataFrame) -> str:
    shape = cmp["shape"].iloc[0]
    return markdown_table(pd.DataFrame({
        "variant": cmp["case"],
        "params": cmp["params"].map(fmt_count),
        "Δ params vs baseline": [fmt_params_delta(d, b) for d, b in zip(cmp["params_delta"], cmp["params_baseline"],
                                                                          strict=True)],
        f"saved activations ({shape})": cmp["act_bytes"].map(fmt_bytes),
        "activations ×": cmp["act_bytes_ratio"].map(fmt_x),
        "KV bytes/token": cmp["kv_per_token"].map(fmt_bytes),
        "KV ×": cmp["kv_per_token_ratio"].map(fmt_x),
        f"forward FLOPs ({shape})": [fmt_flops_executed(d, e)
                                     for d, e in zip(cmp["fwd_flops"], cmp["fwd_executed_flops"], strict=True)],
        "FLOPs ×": cmp["fwd_flops_ratio"].map(fmt_x),
        "utilisation fwd / train": [f"{fmt_util(f)} / {fmt_util(t)}" for f, t in zip(cmp["fwd_util"], cmp["train_util"],
                                                                                  strict=True)],
    }))


def _tokens(column: str) -> tuple[int, int]:
    b, t = column.split()[1].split("x")
    return int(b) * int(t), int(t)


def shapes_table(s: pd.DataFrame) -> str | None:
    """The latency ratio at every measured shape, forward and train: a variant's scaling in one glance."""
    rows = s[(s["metric"] == "latency_ratio") & s["mode"].isin(("forward", "train"))]
    if rows.empty:
        return None
    rows = with_intervals(rows, s, "ratio_interval")
    rows = rows.assign(column=rows["mode"] + " " + rows["batch"].astype(int).astype(str) + "x"
                       + rows["seq_len"].astype(int).astype(str))
    cells = rows.groupby(["case", "column"], sort=False)[["value", "lo", "hi", "interval"]].agg(
        {"value": "median", "lo": "median", "hi": "median", "interval": "all"})
    grid = cells.apply(lambda r: fmt_ratio_with(r["value"], r["lo"], r["hi"], bool(r["interval"])), axis=1).unstack(
        "column")
    order = sorted(grid.columns, key=lambda col: (col.split()[0] != "forward", _tokens(col)))
    grid = grid.reindex(index=list(dict.fromkeys(rows["case"])), columns=order).fillna("—")
    return markdown_table(grid.reset_index().rename(columns={"case": "variant"}))
