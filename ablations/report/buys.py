"""What each choice buys: the table a report opens with, one row per variant measured, cost and quality side by side.

Every cell comes from this run's table except two, each labelled: the predicted time to loss at full size (the
multiplier measured here over the roofline predictor's train-step ratio, ``ablations.predict``) and the published
verdict (the choice's ``Claim.loss``, from the sources its claim cites). Rows:

- cost: parameters against the baseline, training FLOPs per token, the train-step and decode time ratios with their
  95% intervals (the measurement block), KV-cache bytes per token;
- quality: the final loss difference with its Holm-level interval and verdict (``ablations.quality.stats``), the
  compute multiplier in FLOPs with its interval at the same Holm level and time to loss, measured at the quality
  model's shape on this machine (``ablations.quality.worth``);
- transfer: whether the verdict kept its sign over every rung and text of a ``transfer`` sweep in the table;
- the published verdict and whether this run agrees (``agreement``).

Then the multiplier's known answers (``ablations.quality.worth``): readings whose true multiple is known, which the
curve's fit must interpolate. When one misses, the report's first lines say the multipliers are not trusted.
"""

from __future__ import annotations

import pandas as pd

from ablations.quality.worth import k_beside_verdict
from ablations.report.flips import flip_name, flip_order
from ablations.report.formatting import markdown_table, signed
from ablations.report.known_answers import known_answer_table, regime_line
from ablations.report.published import GPT2, agreement, published_loss
from ablations.report.timing_sections import headline_cells
from ablations.results.report_inputs import ReportInputs
from ablations.results.row_arch import arch_from_row


def _loss_cell(q: pd.Series | None, withhold: bool = False) -> str:
    if q is None or pd.isna(q.get("diff")):
        return "—"
    n = q.get("diff_n")
    interval = (f" [{signed(q['diff_lo'])}, {signed(q['diff_hi'])}]" if not pd.isna(q.get("diff_lo"))
                else f" ({int(n) if not pd.isna(n) else 0} seed pair: no interval)")
    return f"{signed(q['diff'])}{interval}" + ("" if withhold else f" {q['verdict']}")


def _label(row: pd.Series, baseline: str) -> str:
    if baseline == GPT2:
        name = flip_name(str(row["variant"]), arch_from_row(row))
        if name:
            return name
    return str(row["variant"])


def buys_frame(table: pd.DataFrame, cmp: pd.DataFrame, summary: pd.DataFrame | None, worth: pd.DataFrame,
               inputs: ReportInputs, transfer: pd.Series | None = None, withhold: bool = False) -> pd.DataFrame:
    """One row per variant compared with its baseline, sweep by sweep in the table's order, each sweep's rows in the
    declarations' order (Llama-2's block last); empty when the run compared no variant with its baseline.
    ``inputs``: the full-size step ratios and the published "no worse" margin recorded beside the rows."""
    quality = pd.DataFrame() if summary is None else summary[
        (summary["metric"] == "val_loss") & summary["reference"].isin(summary["variant"].unique())]
    keys: list[tuple[str, str]] = []
    if not cmp.empty:
        keys += [(s, v) for s, v, b in zip(cmp["sweep"], cmp["variant"], cmp["baseline"], strict=True) if v != b]
    if not quality.empty:
        keys += [(s, v) for s, v, r in zip(quality["sweep"], quality["variant"], quality["reference"], strict=True)
                 if r != v and (s, v) not in keys]
    # The sweeps that ask their question once per cell have sections of their own (only a run with quality rows has
    # them: a timing-only report never loads the statistics).
    if summary is not None:
        from ablations.quality.stats import CELL_FAMILIES
        keys = [k for k in keys if k[0] not in CELL_FAMILIES]
    keys = list(dict.fromkeys(keys))
    if not keys:
        return pd.DataFrame()
    predicted = inputs.train_step_ratios if not worth.empty else {}
    rows = []
    for sweep, variant in keys:
        variant_cmp = cmp[(cmp["sweep"] == sweep) & (cmp["variant"] == variant)] if not cmp.empty else cmp
        q = quality[(quality["sweep"] == sweep) & (quality["variant"] == variant)] if not quality.empty else quality
        # The widest quality model of the sweep, on its first text: one row per choice.
        if not q.empty and "d_model" in q and q["d_model"].notna().any():
            q = q[q["d_model"] == q["d_model"].max()]
        qr = q.iloc[0] if not q.empty else None
        cr = variant_cmp.iloc[0] if not variant_cmp.empty else None
        base = str(cr["baseline"]) if cr is not None else str(qr["reference"]) if qr is not None else GPT2
        w = worth[(worth["sweep"] == sweep) & (worth["variant"] == variant)] if not worth.empty else worth
        wr = w.sort_values("d_model").iloc[-1] if not w.empty else None
        # A row of the results table itself: it carries every choice's column (a summary row does not).
        first = table[(table["sweep"] == sweep) & (table["variant"] == variant)].iloc[0]
        label = _label(first, base)
        pred = predicted.get(flip_name(str(first["variant"]), arch_from_row(first), embeddings=False)) if base == GPT2 \
            else None
        published = published_loss(first, base)
        rows.append({
            "sweep": sweep, "variant": variant, "order": flip_order(first) if base == GPT2 else 0,
            "choice": label,
            "params": _pct(cr, "params_delta", "params_baseline"),
            "train FLOPs": _ratio(cr, "train_flops_ratio"),
            "train step ×": headline_cells(variant_cmp, "train")[0] if cr is not None else "—",
            "decode ×": (headline_cells(variant_cmp, "decode")[0] if cr is not None and not pd.isna(cr.get("decode"))
                         else "—"),
            "KV bytes/token": _kv(cr) + _kv_layouts(table[(table["sweep"] == sweep) & (table["variant"] == variant)]),
            "Δ loss [CI]": _loss_cell(qr, withhold),
            "compute multiplier [CI]": _k_cell(wr, qr),
            "time to loss, measured": wr["ttl_text"] if wr is not None else "—",
            SCENARIO_COLUMN: _predicted_ttl(wr, pred),
            "transfer": _transfer(transfer, variant),
            "published": published or "—",
            "agrees": "withheld" if withhold else agreement(published, qr["verdict"] if qr is not None else None,
                                                            qr["diff_hi"] if qr is not None else None,
                                                            inputs.no_worse_margin),
        })
    frame = pd.DataFrame(rows)
    sweeps = {s: i for i, s in enumerate(dict.fromkeys(frame["sweep"]))}
    frame = frame.iloc[sorted(range(len(frame)), key=lambda i: (sweeps[frame["sweep"].iat[i]], frame["order"].iat[i]))]
    # Two variants of a sweep that move the same choice (the kv sweep's GQA-2 and GQA-4) are told apart by name.
    twice = frame.duplicated(["sweep", "choice"], keep=False)
    frame.loc[twice, "choice"] = frame.loc[twice, "choice"] + " (`" + frame.loc[twice, "variant"] + "`)"
    return frame.reset_index(drop=True)


def buys_table(frame: pd.DataFrame) -> str | None:
    """``buys_frame``'s table (markdown), with a sweep column when the run holds more than one; None when the run
    compared no variant with its baseline."""
    if frame.empty:
        return None
    drop = ["variant", "order"] + (["sweep"] if frame["sweep"].nunique() == 1 else [])
    return markdown_table(frame.drop(columns=drop))


def _pct(r: pd.Series | None, delta: str, base: str) -> str:
    if r is None or pd.isna(r.get(delta)) or not r.get(base):
        return "—"
    return f"{100 * r[delta] / r[base]:+.2g}%".replace("-", "−")


def _ratio(r: pd.Series | None, key: str) -> str:
    return "—" if r is None or pd.isna(r.get(key)) else f"{r[key]:.3g}×"


def _kv(r: pd.Series | None) -> str:
    if r is None or pd.isna(r.get("kv_per_token")):
        return "—"
    ratio = r.get("kv_per_token_ratio")
    return f"{int(r['kv_per_token']):,} B" + ("" if pd.isna(ratio) else f" ({ratio:.3g}×)")


def _kv_layouts(rows: pd.DataFrame) -> str:
    """Where the timed block and the quality model group KV heads differently: both layouts, so that the row's
    bytes and FLOPs (the timed block's) are not read as the loss's (the quality model's)."""
    def layout(r: pd.DataFrame) -> tuple[int, int] | None:
        kv, heads = (pd.to_numeric(r[column], errors="coerce").dropna() for column in ("n_kv_heads", "n_heads"))
        return (int(kv.iloc[0]), int(heads.iloc[0])) if len(kv) and len(heads) else None
    quality = layout(rows[rows["metric"] == "val_loss"])
    timed = layout(rows[rows["metric"] == "latency_ratio"])
    if quality is None or timed is None or quality == timed or quality[0] >= quality[1]:
        return ""
    return f" (timed: {timed[0]} KV of {timed[1]} heads; quality model: {quality[0]} of {quality[1]})"


# Time to loss at full size is a scenario, not a prediction: k measured on the quality model, assumed to carry over
# four orders of magnitude, over the roofline's train-step ratio of Llama-2-7B on an H100.
SCENARIO_COLUMN = "k at the quality size (assumed to carry over) / 7B H100 roofline step ratio"


def _predicted_ttl(w: pd.Series | None, train_ratio: float | None) -> str:
    """The multiplier in steps measured here over the roofline's train-step ratio at full size: a scenario that
    assumes k carries over, labelled so."""
    if w is None or train_ratio is None or pd.isna(w["k_steps"]):
        return "—"
    from ablations.quality.multiplier import Multiplier, time_to_loss

    k = Multiplier(w["k_steps"], w["k_steps_lo"], w["k_steps_hi"], int(w["n"]), int(w["censored"]),
                   str(w["bound"]) if isinstance(w["bound"], str) else "", bool(w["open_lo"]), bool(w["open_hi"]))
    return time_to_loss(k, train_ratio, train_ratio, train_ratio).text() + " (scenario)"


def _k_cell(w: pd.Series | None, q: pd.Series | None) -> str:
    """k in FLOPs; k in steps beside it where the arms' FLOPs per step differ by more than 2%; the seeds k read where
    Δ read others."""
    if w is None:
        return "—"
    cell = k_beside_verdict(w)
    if not pd.isna(w["flops_ratio"]) and abs(float(w["flops_ratio"]) - 1) > 0.02:
        cell += f" (in steps {k_beside_verdict(w, 'steps')})"
    n_delta = q.get("diff_n") if q is not None else None
    if n_delta is not None and not pd.isna(n_delta) and int(n_delta) != int(w["n"]):
        cell += f" ({int(w['n'])} curve seeds; Δ: {int(n_delta)})"
    return cell


def _transfer(counts: pd.Series | None, variant: str) -> str:
    """The variant's verdicts over the transfer sweep's cells (``ablations.quality.transfer.verdict_counts``)."""
    return "—" if counts is None or variant not in counts.index else str(counts[variant])


def buys_section(table: pd.DataFrame, cmp: pd.DataFrame, summary: pd.DataFrame | None,
                 worth: pd.DataFrame, inputs: ReportInputs, withhold: bool = False) -> tuple[list[str], pd.DataFrame]:
    """What each choice buys, the multiplier's known answers, and the transfer and horizon studies, with the table's
    frame (``buys_frame``, its transfer column filled), which the report's top tier reads too. With ``withhold`` (a
    smoke run) the verdict words and the agreement are left out: the numbers stay."""
    from ablations.report.transfer_section import transfer_lines

    transfer, per = transfer_lines(summary, table, worth, inputs.no_worse_margin)
    if summary is not None:
        from ablations.report.horizon_section import horizon_lines
        transfer += horizon_lines(summary, table, worth)
    frame = buys_frame(table, cmp, summary, worth, inputs, per, withhold)
    return _section(frame, transfer, worth, inputs.no_worse_margin), frame


def _section(frame: pd.DataFrame, transfer: list[str], worth: pd.DataFrame, margin: float) -> list[str]:
    body = buys_table(frame)
    known = known_answer_table(worth)
    if body is None and not transfer and known is None:
        return []
    lines = ["## What each choice buys", ""]
    if body is not None:
        lines += ["One row per variant against its sweep's baseline. Time ratios: median with its 95% interval "
                  "(below 1 is faster); Δ loss: the final validation loss difference with its Holm-level interval "
                  "and verdict; compute multiplier: the training FLOPs the baseline needs to reach the variant's "
                  "loss, as a multiple of the variant's, with its interval over seeds at the Δ's Holm level "
                  "(`>`/`<`: past the budgets trained, a bound); time to loss: how many times sooner in wall time "
                  "the variant reaches the baseline's loss (multiplier in steps over the quality model's "
                  "train-step time ratio), measured here; the same k over the roofline's train-step ratio for "
                  "Llama-2-7B on one H100 SXM (k measured at the quality model's size and assumed to carry over: a "
                  "scenario, labelled so). Published: what the sources the choice's claim cites say of the loss; a "
                  "published \"no worse\" "
                  f"agrees only where Δ's upper end rules out a harm above {margin:g} nats per token.", "",
                  body, ""]
    if known is not None:
        lines += ["The multiplier's known answers, each a reading whose true multiple is known: *knot left out*, "
                  "each seed's baseline at an interior budget read on its own curve without that budget (the fit "
                  "interpolating as it does for a variant, over twice the gap); *trained between knots*, the "
                  "baseline trained at a budget no knot has, read on its own seed's curve as a variant is. The "
                  "multipliers are trusted where every one holds.", "", known, ""]
    regime = regime_line(worth)
    if regime is not None:
        lines += [regime, ""]
    return lines + transfer
