"""The roofline in the report: each timed point's measured ratio beside its roofline ratio, bandwidth use, and
the calibrated model's predictions against what was measured.

``points`` turns the long rows into one row per sweep, case, mode and shape. ``validation`` predicts every
point with ``ablations.roofline.time_model.predict`` on this machine's calibration (the ``hardware`` entry
``this_machine``, which ``blockbench calibrate`` writes into the user's folder: its ceilings and efficiencies, not the
run's), and sets the predicted ratio and time against the measured ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablations.config.columns import row_columns
from ablations.measure.calibration import MACHINE
from ablations.report.formatting import fmt_pct, fmt_ratio_with, fmt_util, fmt_x, markdown_table
from ablations.report.tables import baseline_name
from ablations.results.report_inputs import ReportInputs
from ablations.results.row_arch import arch_from_row, baseline_of_row
from ablations.roofline.calls import kernel_calls
from ablations.roofline.hardware import Hardware
from ablations.roofline.time_model import predict
from ablations.roofline.work import mode_work
from components import ArchConfig

PREFIX = {"forward": "", "train": "", "prefill": "prefill_", "decode": "decode_"}
KEYS = ["sweep", "case", "base_case", "variant", "mode", "batch", "seq_len"]
# What rebuilds a row's model (``arch_of``): every declared choice's columns, the sizes, and the setup.
ARCH = [*row_columns(), "n_heads", "d_model", "n_layers", "ffn_hidden", "dtype", "device"]
ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
CALIBRATION = MACHINE
# The goals: paired ratios of compute-bound forward/train shapes within 5%; decode within 15%.
GOALS = {"forward/train, compute-bound": 0.05, "decode": 0.15}


def points(measured: pd.DataFrame) -> pd.DataFrame:
    """One row per timed point: measured ratio (median, quartiles), times, roofline ratio and bound, utilisations."""
    m = measured[measured["mode"].isin(list(PREFIX)) & measured["batch"].notna()]
    out = []
    for key, g in m.groupby(KEYS, sort=False, dropna=False):
        p = PREFIX[key[4]]
        ratio = g[g["metric"] == f"{p}latency_ratio"]
        if ratio.empty:
            continue

        def val(metric: str, g: pd.DataFrame = g) -> float:
            v = g.loc[g["metric"] == metric, "value"]
            return float(v.median()) if not v.empty else np.nan

        roof = g.loc[g["metric"] == "roofline_time", "note"]
        r = dict(zip(KEYS, key, strict=True)) | {column: g[column].iloc[0] for column in ARCH if column in g}
        # The ratio's 95% interval where the table has it, else its rounds' quartiles (``interval`` says which).
        iv = g[g["metric"] == f"{p}ratio_interval"]
        bounds = iv if not iv.empty else ratio
        r |= {"measured_ratio": float(ratio["value"].median()), "lo": float(bounds["lo"].median()),
              "hi": float(bounds["hi"].median()), "interval": not iv.empty, "latency": val(f"{p}latency"),
              "baseline_latency": val(f"{p}baseline_latency"), "roofline_ratio": val("roofline_ratio"),
              "roofline_time": val("roofline_time"),
              "bound": str(roof.iloc[0]).split("-")[0] if not roof.empty else "",
              "bandwidth_utilisation": val("bandwidth_utilisation"), "utilisation": val("utilisation"),
              "bytes": val("bytes_moved"), "flops": val("flops")}
        out.append(r)
    return pd.DataFrame(out)


def arch_of(r: pd.Series) -> ArchConfig:
    """The architecture a row describes (its FFN width as measured)."""
    return arch_from_row(r)


def calibration(inputs: ReportInputs) -> Hardware | None:
    """The calibration of the machine that ran the sweep, as recorded beside its rows."""
    return Hardware.from_dict(inputs.calibration) if inputs.calibration is not None else None


def no_calibration() -> str:
    return (f"No `{CALIBRATION}` hardware entry (in `$BLOCKBENCH_HOME/hardware/` or the package's `conf/hardware/`): "
            "run `blockbench calibrate` to validate the performance model on this machine")


def validation(pts: pd.DataFrame, hw: Hardware) -> pd.DataFrame:
    """Predicted ratio and time beside the measured ones, for every CPU point in the calibration's dtype."""
    use = pts[(pts["device"] == "cpu") & (pts["dtype"] == hw.dtype)] if not pts.empty else pts
    rows = []
    for _, r in use.iterrows():
        arch = arch_of(r)
        base = baseline_of_row(r, arch)
        mode, b, t = str(r["mode"]), int(r["batch"]), int(r["seq_len"])
        elem = ELEMENT_BYTES[str(r["dtype"])]
        pv = predict(mode_work(arch, mode, b, t, elem), hw, kernel_calls(arch, mode))
        pb = predict(mode_work(base, mode, b, t, elem), hw, kernel_calls(base, mode))
        rows.append(r.to_dict() | {"predicted_s": pv.seconds, "predicted_bound": pv.bound,
                                   "predicted_ratio": pv.seconds / pb.seconds, "predicted_baseline_s": pb.seconds})
    v = pd.DataFrame(rows)
    if v.empty:
        return v
    v["ratio_error"] = v["predicted_ratio"] / v["measured_ratio"] - 1
    v["time_error"] = v["predicted_s"] / v["latency"] - 1
    v["group"] = [_group(m, bnd) for m, bnd in zip(v["mode"], v["bound"], strict=True)]
    return v


def _group(mode: str, bound: str) -> str:
    if mode in ("forward", "train"):
        return f"forward/train, {bound or 'unknown'}-bound"
    return mode


def error_summary(v: pd.DataFrame) -> pd.DataFrame:
    """Median and worst |error| of ratios (variants only: the baseline's predicted ratio is 1 by construction)
    and of absolute times (every point), per group, and whether the issue's goal for the group was met."""
    rows = []
    for group, g in v.groupby("group", sort=True):
        flips = g[g["case"] != g["base_case"]]
        ratio_err, time_err = flips["ratio_error"].abs(), g["time_error"].abs()
        goal = GOALS.get(str(group))
        met = "—" if goal is None or ratio_err.empty else (
            f"{'met' if ratio_err.max() <= goal else 'missed'} (≤{100 * goal:.0f}% worst)")
        rows.append({"points": f"{group} ({len(g)}; {len(flips)} flips)",
                     "ratio error median": fmt_pct(ratio_err.median()) if len(flips) else "—",
                     "ratio error worst": fmt_pct(ratio_err.max()) if len(flips) else "—",
                     "time error median": fmt_pct(time_err.median()), "time error worst": fmt_pct(time_err.max()),
                     "goal for ratios": met})
    return pd.DataFrame(rows)


def _representative(p: pd.DataFrame) -> pd.DataFrame:
    """Per case and mode, the point with the most tokens, ties to the longer sequence (decode: the longest
    context, largest batch there), as the speed table picks."""
    decode = p["mode"] == "decode"
    p = p.assign(first=np.where(decode, p["seq_len"], p["batch"] * p["seq_len"]),
                 second=np.where(decode, p["batch"], p["seq_len"]))
    idx = p.sort_values(["first", "second"]).groupby(["case", "mode"], sort=False).tail(1).index
    return p.loc[idx].sort_values(["mode", "case"], key=lambda s: s.map(_order) if s.name == "mode" else s)


def _order(mode: str) -> int:
    return list(PREFIX).index(mode)


def roofline_table(p: pd.DataFrame) -> str:
    rep = _representative(p)
    return markdown_table(pd.DataFrame({
        "mode": rep["mode"], "variant": rep["case"],
        "shape": [f"{int(b)}x{int(t)}" for b, t in zip(rep["batch"], rep["seq_len"], strict=True)],
        "measured ×": [fmt_ratio_with(v, lo, hi, bool(i)) for v, lo, hi, i in
                       rep[["measured_ratio", "lo", "hi", "interval"]].to_numpy()],
        "roofline ×": rep["roofline_ratio"].map(fmt_x), "roofline bound": rep["bound"],
        "bandwidth utilisation": rep["bandwidth_utilisation"].map(fmt_util),
        "FLOP utilisation": rep["utilisation"].map(fmt_util),
    }))


def decode_bandwidth_table(p: pd.DataFrame) -> str | None:
    d = p[p["mode"] == "decode"]
    if d.empty:
        return None
    grid = d.pivot_table(index=["batch", "seq_len"], columns="case", values="bandwidth_utilisation", sort=False)
    base = baseline_name(d)
    cases = sorted(grid.columns, key=lambda case: not str(case).startswith(base))
    cells = pd.DataFrame({"batch x context": [f"{int(b)} x {int(context):,}" for b, context in grid.index]})
    for case in cases:
        cells[case] = grid[case].map(fmt_util).to_numpy()
    return markdown_table(cells)


BYTES_MODEL = (
    "Bytes moved (`ablations.roofline.work`): weights read once per call (a learned position table: only the rows "
    "used), the KV cache read over every key attended and written for the new tokens, and activations: inputs and "
    "outputs of each linear layer and norm, Q in and output out of attention (scores stay on chip; elementwise ops "
    "are not counted); a training step is 3x the forward. Roofline time = max(FLOPs / matmul peak, bytes / "
    "bandwidth) at this run's measured ceilings; bandwidth utilisation = bytes / measured time / bandwidth."
)


def roofline_section(s: pd.DataFrame) -> list[str]:
    """One sweep's measured ratios against roofline ratios, and bandwidth utilisation at every decode point."""
    p = points(s)
    if p.empty or p["roofline_ratio"].isna().all():
        return ["No roofline rows in this sweep (timing was skipped, or the run predates them).", ""]
    lines = ["### Measured against roofline", "", BYTES_MODEL, "", f"Ratio = variant / `{baseline_name(p)}` at the "
             "same shape: measured (paired, median [95% interval]) against the roofline's; where they differ, "
             "the design choice moved FLOPs or bytes by the roofline's amount and this machine's kernels turned it "
             "into the measured time.", "", roofline_table(p), ""]
    grid = decode_bandwidth_table(p)
    if grid:
        lines += ["Bandwidth utilisation at every decode point (bytes moved / time / this run's bandwidth):", "",
                  grid, ""]
    return lines


def baseline_drift(pts: pd.DataFrame) -> pd.Series:
    """How far the baseline's own time moved between the sweep's points, per shape timed at two or more points (each
    point times the baseline beside its variant): max / min − 1 of its median latency there."""
    timed = pts.dropna(subset=["baseline_latency"]) if "baseline_latency" in pts else pts.iloc[0:0]
    # The same baseline call: its block at the same sizes, dtype and device, at one shape.
    same = [k for k in ("sweep", "base_case", "d_model", "n_layers", "dtype", "device", "mode", "batch", "seq_len")
            if k in timed]
    groups = timed.groupby(same, dropna=False)["baseline_latency"]
    spread = groups.max() / groups.min() - 1
    return spread[groups.count() >= 2]


def drift_text(pts: pd.DataFrame) -> str:
    """``baseline_drift`` as a parenthesis for the report's sentence; empty where no shape was timed twice."""
    drift = baseline_drift(pts)
    if drift.empty:
        return ""
    return (f" (in this run the baseline's own time at one shape moved by a median {100 * drift.median():.0f}% and "
            f"up to {100 * drift.max():.0f}% between points, over {len(drift)} shapes)")


def validation_section(measured: pd.DataFrame, inputs: ReportInputs) -> tuple[list[str], pd.DataFrame]:
    """The prediction against every measured point, and the frame for the figure."""
    hw = calibration(inputs)
    pts = points(measured)
    if hw is None:
        return [f"{no_calibration()}.", ""], pd.DataFrame()
    v = validation(pts, hw) if not pts.empty else pd.DataFrame()
    if v.empty:
        return [f"No measured CPU {hw.dtype} points to validate the performance model against.", ""], v
    lines = [
        f"Every measured point predicted by `ablations.roofline.time_model.predict` with this machine's calibration "
        f"({hw.source}): each part of the model (matrix products, attention, norms) at its own bound"
        f"{'' if hw.attention_overlapped else ' (attention: its products and its cache reads one after the other)'}"
        f", plus per-call overhead. Error = predicted / measured − 1. Ratios are paired measurements (the "
        f"baseline's A/A spread in the speed table is their noise floor); absolute times move with machine load "
        f"between points{drift_text(pts)} and between the run and the calibration, and the time errors include that "
        f"drift.", "", markdown_table(error_summary(v)), "",
    ]
    worst = v.loc[v["ratio_error"].abs().sort_values(ascending=False).index].head(8)
    lines += ["Largest ratio errors:", "", markdown_table(pd.DataFrame({
        "sweep": worst["sweep"], "variant": worst["case"], "mode": worst["mode"],
        "shape": [f"{int(b)}x{int(t)}" for b, t in zip(worst["batch"], worst["seq_len"], strict=True)],
        "measured ×": worst["measured_ratio"].map(fmt_x), "predicted ×": worst["predicted_ratio"].map(fmt_x),
        "predicted bound": worst["predicted_bound"], "error": worst["ratio_error"].map(lambda e: f"{100 * e:+.1f}%"),
    })), ""]
    return lines, v
