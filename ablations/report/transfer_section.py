"""The transfer sweep's section of the report (``ablations.quality.transfer``): its rungs, each choice's verdict and
multiplier at every rung and text, sign agreement, and decision accuracy as DataDecide defines it."""

from __future__ import annotations

import functools
import math

import pandas as pd

from ablations.quality.worth import training_bytes_per_param
from ablations.report.formatting import markdown_table
from ablations.report.published import GPT2, agreement, published_loss


def corpus_names(table: pd.DataFrame) -> dict[str, str]:
    """A short name for each corpus hash of the quality rows, from the source their notes name."""
    rows = table[table["corpus"].notna() & table["note"].astype(str).str.contains("corpus: ", regex=False)]
    names = {}
    for sha, note in zip(rows["corpus"], rows["note"].astype(str), strict=True):
        source = note.split("corpus: ", 1)[1]
        names.setdefault(str(sha), "english" if "shakespeare" in source else "stdlib" if "stdlib" in source else
                         source.split(",")[0][:24])
    return names


def rung_table(finals: pd.DataFrame) -> pd.DataFrame:
    """Per rung (quality width), the baseline's model as its rows say it trained: parameters, steps, training bytes
    per parameter and training FLOPs, the last also as a fraction of the top rung's."""
    base = finals[finals["variant"] == GPT2]
    rungs = []
    for width, g in base.groupby(pd.to_numeric(base["d_model"])):
        steps = pd.to_numeric(g["step"], errors="coerce").median()
        rungs.append({"rung width": int(width), "parameters": int(pd.to_numeric(g["params"]).median()),
                      "steps": int(steps), "bytes per parameter": training_bytes_per_param(g),
                      "training FLOPs": float(pd.to_numeric(g["train_flops_step"], errors="coerce").median() * steps)})
    frame = pd.DataFrame(rungs)
    frame["× top"] = frame["training FLOPs"] / frame["training FLOPs"].max()
    return frame


def _rung_lines(finals: pd.DataFrame) -> list[str]:
    rungs = rung_table(finals)
    shown = rungs.assign(**{"parameters": rungs["parameters"].map(lambda n: f"{n:,}"),
                            "bytes per parameter": rungs["bytes per parameter"].map(lambda x: f"{x:.2f}"),
                            "training FLOPs": rungs["training FLOPs"].map(lambda x: f"{x:.3g}"),
                            "× top": rungs["× top"].map(lambda x: f"{x:.3g}×")})
    return ["The rungs, as the baseline's rows say each trained (a byte a token):", "", markdown_table(shown), ""]


def transfer_lines(summary: pd.DataFrame | None, table: pd.DataFrame, worth: pd.DataFrame,
                   margin: float) -> tuple[list[str], pd.Series | None]:
    """The transfer sweep's section and its per-choice verdict counts, when the run has one (``margin``: the harm
    a published "no worse" may hide, ``ReportInputs.no_worse_margin``)."""
    from ablations.quality import transfer
    from ablations.quality.worth import seed_readings

    cells = transfer.cells(summary) if summary is not None else pd.DataFrame()
    if cells.empty:
        return [], None
    rows = table[table["sweep"] == transfer.SWEEP]
    names = corpus_names(rows)
    published = {}
    for variant in cells["variant"].unique():
        first = rows[rows["variant"] == variant].iloc[0]
        published[variant] = published_loss(first, str(first.get("baseline") or GPT2))
    per = transfer.per_choice(cells, seed_readings(rows), worth[worth["sweep"] == transfer.SWEEP] if not worth.empty
                              else worth, names, published, functools.partial(agreement, margin=margin))
    rate, n = transfer.consistency_rate(cells)
    texts = ", ".join(f"{names.get(k, str(k)[:8])} (`{str(k)[:12]}`)" for k in cells["corpus"].unique())
    widths = ", ".join(str(int(d)) for d in sorted(cells["d_model"].unique()))
    finals = rows[(rows["metric"] == "val_loss") & (rows["mode"] == "final") & (rows["status"].fillna("ok") == "ok")]
    n_texts = cells["corpus"].nunique()
    on_texts = f"{n_texts} text{'s' if n_texts != 1 else ''}"
    lines = ["### Does the verdict carry? (`transfer`)", "",
             f"Each choice at {cells['d_model'].nunique()} rungs (quality widths {widths}, width and steps growing "
             f"together) on {on_texts}: {texts}. Each cell: the verdict against the baseline of the same rung and "
             "text (paired t, Holm over the cell's comparisons) and k, the compute multiplier in FLOPs [95% CI]. "
             "Sign agreement (the fraction of choice, text and lower rung whose loss difference "
             "against the baseline has the top rung's sign; half of such cases may be null effects, whose sign is a "
             f"coin flip): **{'—' if math.isnan(rate) else f'{100 * rate:.0f}%'}** of {n}. Trend of k: its factor "
             "(in steps) per doubling of training compute with the 95% interval (least squares over every seed and "
             "rung).", "", markdown_table(per), ""]
    lines += _rung_lines(finals)
    accuracy = []
    for corpus, g in finals.groupby("corpus"):
        d = transfer.decision_accuracy(g.assign(d_model=pd.to_numeric(g["d_model"]), value=pd.to_numeric(g["value"])),
                                       "d_model")
        accuracy.append(d.assign(text=names.get(str(corpus), str(corpus)[:8])))
    if accuracy:
        d = pd.concat(accuracy)
        for col in ("decision accuracy", "accuracy without them"):
            d[col] = d[col].map(lambda x: "—" if pd.isna(x) else f"{100 * x:.0f}%")
        params = pd.to_numeric(finals.loc[finals["variant"] == GPT2, "params"], errors="coerce")
        lines += ["Decision accuracy as DataDecide defines it: of every pair of arms (the baseline among them), the "
                  "share a lower rung orders by mean final loss as the top rung does on the same text; a pair whose "
                  "paired difference at the top rung has a 95% interval holding 0 is a null effect, counted apart. "
                  "DataDecide ranks pretraining recipes at 4M-1B parameters against 1B; these rungs span "
                  f"{params.min() / 1e6:.2g}M to {params.max() / 1e6:.2g}M parameters.", "",
                  markdown_table(d.rename(columns={"d_model": "lower rung width"})), ""]
    return lines, transfer.verdict_counts(cells)
