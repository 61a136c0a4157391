"""The report's figures of every sweep, drawn and written: which figures a sweep has (``FIGURES``: file stem, title,
rows, builder, caption), PNG and SVG each, and the markdown lines that show them or say why one was skipped.

Each builder (``ablations.report.timing_figures``, ``quality_figures``, ``worth_figures``) takes one sweep's rows and
returns a ``Figure``, or a string saying why there is nothing to draw; the report then writes that line instead of an
empty or invented figure. The style is ``ablations.report.figure_style``'s, the captions
``ablations.report.figure_captions``'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from ablations.report.figure_captions import CAPTIONS, remove_stale
from ablations.report.figure_style import STYLE, report_colours
from ablations.report.quality_figures import extrapolation, loss_by_position, lr_scan, scale_effects, training_curves
from ablations.report.timing_figures import (
    decode_ratio_vs_context,
    measured_vs_roofline,
    predicted_vs_measured,
    ratio_bars,
    ratio_vs_seq,
)
from ablations.report.verdicts import ANSWER_SWEEPS
from ablations.report.worth_figures import by_horizon, cost_quality, multipliers
from ablations.results.durable import write_atomic
from ablations.roofline.hardware import Hardware

Builder = Callable[..., "Figure | str"]


@dataclass(frozen=True)
class Kind:
    """One figure of a sweep: its file stem, title (alt text and skip line), frame and builder; its caption note is
    ``figure_captions.CAPTIONS``' entry for its stem."""

    stem: str
    title: str
    source: str
    build: Builder
    # The builder also takes the machine's calibration recorded beside the rows (the performance model's figure).
    calibrated: bool = False

    @property
    def note(self) -> str:
        return CAPTIONS[self.stem]


FIGURES: list[Kind] = [
    Kind("ratios", "Paired latency ratio against the baseline", "cmp", ratio_bars),
    Kind("latency-ratio-vs-seq", "Paired latency ratio against sequence length", "measured", ratio_vs_seq),
    Kind("decode-ratio-vs-context", "Paired decode-step ratio against context length, per n_kv_heads", "measured",
         decode_ratio_vs_context),
    Kind("roofline", "Measured ratio against roofline ratio, every timed point", "measured", measured_vs_roofline),
    Kind("prediction", "Performance model against measurement: ratios and absolute times", "measured",
         predicted_vs_measured, calibrated=True),
    Kind("training-curves", "Training curves over seeds", "quality", training_curves),
    Kind("extrapolation", "Loss against evaluation length", "quality", extrapolation),
    Kind("loss-by-position", "Loss by position", "quality", loss_by_position),
    Kind("lr-scan", "Final loss against learning rate, per arm", "quality", lr_scan),
    Kind("multipliers", "Compute multiplier per comparison", "worth", multipliers),
    Kind("k-vs-horizon", "Compute multiplier against training length", "worth", by_horizon),
    Kind("cost-quality", "Cost against quality", "worth", cost_quality),
    Kind("scale", "Validation loss and each effect against parameters", "summary", scale_effects),
]


ABSENT = {"measured": "no block measurements in this sweep", "cmp": "no variant compared with the baseline",
          "worth": "no compute multipliers in this sweep (train.budgets=[])",
          "quality": "no quality rows (training runs) in this sweep",
          "summary": "no quality comparisons in this sweep"}


def save(fig: Figure, folder: Path, stem: str) -> list[Path]:
    """PNG and SVG of ``fig``, each written whole or not at all: a full disk leaves the previous build's file."""
    png, svg = folder / f"{stem}.png", folder / f"{stem}.svg"
    write_atomic(png, lambda f: fig.savefig(f, format="png", dpi=150, metadata={"Software": None},
                                            bbox_inches="tight"))
    write_atomic(svg, lambda f: fig.savefig(f, format="svg", metadata={"Date": None}, bbox_inches="tight"))
    return [png, svg]


def drawing_order(sweeps: list[str], measured: pd.DataFrame, quality: pd.DataFrame) -> list[str]:
    """The report's variants in the order that gives each its colour: each sweep's baseline first, then the answer's
    sweeps' arms (``verdicts.ANSWER_SWEEPS``), then every other sweep's, each as its rows first name them."""
    frames = [f for f in (quality, measured) if not f.empty and "variant" in f]
    first = sorted(sweeps, key=lambda sweep: sweep not in ANSWER_SWEEPS)
    named = [v for sweep in first for f in frames for v in f.loc[f["sweep"] == sweep, "variant"].dropna().astype(str)]
    bases = [str(b) for f in frames if "baseline" in f for b in f["baseline"].dropna()]
    return list(dict.fromkeys([*bases, *named]))


def draw_all(folder: Path, sweeps: list[str], measured: pd.DataFrame, quality: pd.DataFrame,
             cmp: pd.DataFrame, summary: pd.DataFrame | None = None,
             worth: pd.DataFrame | None = None, hardware: Hardware | None = None) -> dict[str, list[str]]:
    """Every figure of every sweep into ``folder``; per sweep, the markdown lines (images or skip notes).
    ``hardware``: the calibration recorded beside the rows, for the figures that take it.

    Stale figures of an earlier build are removed, so the folder holds exactly what REPORT.md shows.
    """
    frames = {"measured": measured, "quality": quality, "cmp": cmp,
              "summary": summary if summary is not None else pd.DataFrame(),
              "worth": worth if worth is not None else pd.DataFrame()}
    written: set[Path] = set()
    lines: dict[str, list[str]] = {}
    with matplotlib.rc_context(STYLE), report_colours(drawing_order(sweeps, measured, quality)):
        for sweep in sweeps:
            lines[sweep], skipped = [], []
            for kind in FIGURES:
                frame = frames[kind.source]
                data = frame[frame["sweep"] == sweep] if not frame.empty else frame
                extra = (hardware,) if kind.calibrated else ()
                result = kind.build(data, *extra) if not data.empty else ABSENT[kind.source]
                name = f"{sweep}-{kind.stem}"
                if isinstance(result, str):
                    skipped.append(f"- *{kind.title}: skipped, {result}.*")
                    continue
                paths = save(result, folder, name)
                written.update(paths)
                note = f" {kind.note}" if kind.note else ""
                lines[sweep] += [f"![{kind.title}]({folder.name}/{name}.png)", "",
                                 f"*{kind.title}.*{note} ([SVG]({folder.name}/{name}.svg))", ""]
            lines[sweep] += skipped
    remove_stale(folder, written)
    return lines
