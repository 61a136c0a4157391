"""Summaries of a sweep that trains each variant at several quality-model widths (``+sweep=scale``) or training
lengths (``+sweep=horizon``): how to tell, and the order a reader scans them in. Pandas only, so the report can use
it where ``quality.stats`` (scipy) is not importable."""

from __future__ import annotations

import pandas as pd


def several_widths(summary: pd.DataFrame) -> bool:
    """Whether a summary compares variants at more than one quality-model width (``+sweep=scale``)."""
    return "d_model" in summary and summary["d_model"].nunique() > 1


def several_lengths(summary: pd.DataFrame) -> bool:
    """Whether a summary compares variants trained for more than one number of steps (``+sweep=horizon``)."""
    return "train_steps" in summary and summary["train_steps"].nunique() > 1


def by_variant_then_width(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of a summary with each variant's widths and lengths together (variants in first-seen order, widths
    then steps rising); unchanged where there is one of each."""
    keys = [k for k, several in (("d_model", several_widths(summary)), ("train_steps", several_lengths(summary)))
            if several]
    if not keys:
        return summary
    first = {name: i for i, name in enumerate(dict.fromkeys(summary["variant"]))}
    order = summary["variant"].map(first)
    return summary.assign(_order=order).sort_values(["_order", *keys], kind="stable").drop(columns="_order")
