"""The comparison: one row per sweep and case, numbers only, that every table, claim and figure reads.

Per variant: the paired latency ratios (forward and train at the sweep's headline shape, decode at its
longest context, ``ablations.measure.shapes``) with their 95% intervals and quartiles, tokens/s, FLOPs,
utilisation, activation and KV bytes, and the same quantities of the baseline row of its sweep for the ratios
and the A/A noise floor.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablations.config.columns import row_columns
from ablations.measure.shapes import headline_decode, headline_shape


def pick(g: pd.DataFrame, metric: str, mode: str | None = None, batch: float | None = None,
         seq: float | None = None) -> pd.Series | None:
    """Median over duplicates of value, lo and hi for one metric at one shape; None when absent."""
    sel = g["metric"] == metric
    if mode is not None:
        sel &= g["mode"] == mode
    if batch is not None:
        sel &= g["batch"] == batch
    if seq is not None:
        sel &= g["seq_len"] == seq
    rows = g.loc[sel, ["value", "lo", "hi"]]
    if rows.empty:
        return None
    return rows.median()


def largest_shape(g: pd.DataFrame) -> tuple[float, float] | None:
    """The forward/train headline shape (``ablations.measure.shapes.headline_shape``) among the measured
    ones."""
    rows = g[g["mode"].isin(("forward", "train")) & g["batch"].notna() & g["seq_len"].notna()]
    shape = headline_shape(zip(rows["batch"], rows["seq_len"], strict=True))
    return None if shape is None else (float(shape[0]), float(shape[1]))


def longest_decode(g: pd.DataFrame) -> tuple[float, float] | None:
    """(batch, context) of the headline decode point (``ablations.measure.shapes.headline_decode``)."""
    rows = g[(g["mode"] == "decode") & g["seq_len"].notna()]
    point = headline_decode(zip(rows["batch"], rows["seq_len"], strict=True))
    return None if point is None else (float(point[0]), float(point[1]))


def shape_name(shape: tuple[float, float] | None) -> str:
    return "" if shape is None else f"{int(shape[0])}x{int(shape[1])}"


def comparison(measured: pd.DataFrame) -> pd.DataFrame:
    """Each variant against the baseline, per sweep: the numbers every table and claim reads."""
    out = []
    for sweep, s in measured.groupby("sweep", sort=False):
        shape, decode = largest_shape(s), longest_decode(s)
        for case, g in s.groupby("case", sort=False):
            out.append(_compare_case(str(sweep), str(case), g, shape, decode))
    frame = pd.DataFrame(out)
    if frame.empty:
        return frame
    return _against_baseline(frame)


def _compare_case(sweep: str, case: str, g: pd.DataFrame, shape: tuple[float, float] | None,
                  decode: tuple[float, float] | None) -> dict:
    first = g.iloc[0]
    r = {"sweep": sweep, "case": case, "base_case": first["base_case"], "variant": first["variant"],
         "baseline": first.get("baseline") if isinstance(first.get("baseline"), str) else "gpt2"}
    for column in (*row_columns(), "n_heads", "device", "dtype", "compile", "torch"):
        r[column] = first.get(column)  # a table without a declared choice's column gives None
    r["params"], r["params_baseline"] = g["params"].median(), g["params_baseline"].median()
    r["shape"] = shape_name(shape)
    b, t = shape if shape else (None, None)
    for mode, key in (("forward", "fwd"), ("train", "train")):
        _put(r, key, pick(g, "latency_ratio", mode, b, t), spread=True)
        _precision(r, key, g, "ratio_interval", mode, b, t)
        _put(r, f"{key}_tps", pick(g, "throughput", mode, b, t))
        _put(r, f"{key}_flops", pick(g, "flops", mode, b, t))
        # Present only where the kernels computed more than the design asks (a window's dense masked kernel).
        _put(r, f"{key}_executed_flops", pick(g, "executed_flops", mode, b, t))
        _put(r, f"{key}_util", pick(g, "utilisation", mode, b, t))
    _put(r, "act_bytes", pick(g, "activation_bytes", "train", b, t))
    r["decode_batch"], r["decode_ctx"] = decode if decode else (np.nan, np.nan)
    batch, context = decode if decode else (None, None)
    _put(r, "decode", pick(g, "decode_latency_ratio", "decode", batch, context), spread=True)
    _precision(r, "decode", g, "decode_ratio_interval", "decode", batch, context)
    _put(r, "decode_s", pick(g, "decode_latency", "decode", batch, context))
    # What the design moved (bytes, the roofline ratio) beside what this machine's kernels made of it.
    _put(r, "decode_bytes", pick(g, "bytes_moved", "decode", batch, context))
    _put(r, "decode_roofline", pick(g, "roofline_ratio", "decode", batch, context))
    _put(r, "decode_bw_util", pick(g, "bandwidth_utilisation", "decode", batch, context))
    _put(r, "decode_ops", pick(g, "decode_ops", "decode", batch, context))
    kv = pick(g, "kv_cache_bytes", "decode", batch, context)
    r["kv_per_token"] = kv["value"] / (batch * context) if kv is not None else np.nan
    return r


def _precision(r: dict, key: str, g: pd.DataFrame, metric: str, mode: str, batch: float | None,
               seq: float | None) -> None:
    """How precise the ratio ``key`` turned out: its 95% interval's relative half-width (``{key}_ci``) and bounds
    (``{key}_ci_lo``, ``{key}_ci_hi``), the rounds it took (``{key}_rounds``), and whether it stopped on its round
    budget before reaching its target (``{key}_budget``). NaN where the table predates the interval rows."""
    stat = pick(g, metric, mode, batch, seq)
    sel = (g["metric"] == metric) & (g["mode"] == mode)
    if batch is not None:
        sel &= (g["batch"] == batch) & (g["seq_len"] == seq)
    rows = g[sel]
    for part, column in (("", "value"), ("_lo", "lo"), ("_hi", "hi")):
        r[f"{key}_ci{part}"] = np.nan if stat is None else stat[column]
    r[f"{key}_rounds"] = rows["n"].max() if not rows.empty else np.nan
    r[f"{key}_budget"] = bool(rows["note"].astype(str).str.contains("budget").any()) if not rows.empty else False


def _put(r: dict, key: str, stat: pd.Series | None, spread: bool = False) -> None:
    r[key] = np.nan if stat is None else stat["value"]
    if spread:
        r[f"{key}_lo"] = np.nan if stat is None else stat["lo"]
        r[f"{key}_hi"] = np.nan if stat is None else stat["hi"]


def _against_baseline(frame: pd.DataFrame) -> pd.DataFrame:
    """Ratios to the baseline row of the same sweep and settings, where the sweep measured one."""
    frame["params_delta"] = frame["params"] - frame["params_baseline"]
    base = frame.set_index(["sweep", "case"])
    keys = list(zip(frame["sweep"], frame["base_case"], strict=True))

    def ref(col: str) -> pd.Series:
        return pd.Series([base[col].get(k, np.nan) for k in keys], index=frame.index)

    for col in ("fwd_flops", "train_flops", "act_bytes", "kv_per_token", "decode_bytes"):
        frame[f"{col}_ratio"] = frame[col] / ref(col)
    frame["decode_bw_util_baseline"] = ref("decode_bw_util")
    # The baseline timed against itself (A/A): its spread is the noise floor a variant's ratio must clear.
    for key in ("fwd", "train", "decode"):
        frame[f"{key}_aa_lo"], frame[f"{key}_aa_hi"] = ref(f"{key}_lo"), ref(f"{key}_hi")
        frame[f"{key}_aa_ci_lo"], frame[f"{key}_aa_ci_hi"] = ref(f"{key}_ci_lo"), ref(f"{key}_ci_hi")
    return frame
