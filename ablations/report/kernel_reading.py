"""Where a choice measures slower than its work: the component whose kernel costs it, read from the rows each point
writes for its swapped components timed alone (``ablations.measure.components_alone``).

A component that moves no more bytes and FLOPs than the one it replaces, yet measures slower alone (its interval
wholly above 1), costs by its kernel, not by work the design asks for: the reading names it, gives its time against the
one it replaces and, where it was timed through ``torch.compile`` too, what the choice costs on that fused path.
"""

from __future__ import annotations

import pandas as pd

from ablations.report.formatting import fmt_spread


def kernel_note(table: pd.DataFrame, sweep: str, variant: str, device: object) -> str:
    """One clause per component of ``variant`` (in ``sweep``, on ``device``) that asks no more of the machine and
    measures slower alone; empty where none does or nothing was timed alone."""
    if "component" not in table:
        return ""
    rows = table[(table["sweep"] == sweep) & (table["variant"] == variant) & table["component"].notna()
                 & (table["device"].astype(str) == str(device))]
    notes = []
    for component, g in rows.groupby("component", sort=False):
        ratio, interval = _value(g, "component_latency_ratio"), _row(g, "component_ratio_interval")
        bytes_ratio, flops_ratio = _value(g, "component_bytes_ratio"), _value(g, "component_flops_ratio")
        if ratio is None or interval is None or bytes_ratio is None:
            continue
        asks_less = bytes_ratio <= 1 and (flops_ratio is None or flops_ratio <= 1)
        if not (asks_less and float(interval["lo"]) > 1):
            continue
        alone = fmt_spread(ratio, float(interval["lo"]), float(interval["hi"]))
        note = (f"its {component} alone, forward and backward, takes {alone} the baseline's at {bytes_ratio:.2f}× "
                "the bytes: its kernel's cost, not work the choice asks for")
        compiled, compiled_iv = (_value(g, "component_compiled_latency_ratio"),
                                 _row(g, "component_compiled_ratio_interval"))
        if compiled is not None:
            lo, hi = (float(compiled_iv[k]) for k in ("lo", "hi")) if compiled_iv is not None else (None, None)
            note += f"; both compiled, {fmt_spread(compiled, lo, hi)}"
        notes.append(note)
    return "; ".join(notes)


def _row(g: pd.DataFrame, metric: str) -> pd.Series | None:
    found = g[(g["metric"] == metric) & g["value"].notna()]
    return found.iloc[0] if len(found) else None


def _value(g: pd.DataFrame, metric: str) -> float | None:
    row = _row(g, metric)
    return float(row["value"]) if row is not None else None
