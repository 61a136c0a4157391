"""A report's figures apart from the plotting: what each says under it, after its title, how to read it
(``figures.FIGURES`` pairs each with its builder; the report prints it in italics with a link to the SVG), and the
files of its ``figures/`` folder. A report built without figures must not import matplotlib, and must still leave no
figure from an earlier build beside a REPORT.md that does not show it."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

# Said under every figure of paired ratios.
PAIRED = ("Every point is the variant's time over its baseline's (the block the sweep pairs with: `gpt2` unless it "
          "ran with baseline=llama2) from the same pairing (both timed in alternating rounds of one process), median "
          "with its 95% interval; 1 is no difference and the baseline's own line, it against itself, is the noise "
          "floor. Absolute times of different points are not drawn: the points "
          "ran minutes apart and the machine's speed drifts between them by more than most effects.")
# By figure stem (a sweep's figure file is ``<sweep>-<stem>.png``).
CAPTIONS = {
    "ratios": (
        "Variant time over the baseline's from the same rounds, median with its 95% interval; bars start at 1. The "
        "hatched bar is the baseline timed against itself: the A/A noise floor a variant's bar must clear."),
    "latency-ratio-vs-seq": PAIRED + " The speed table's tokens/s are the absolute figures.",
    "decode-ratio-vs-context": PAIRED + (
        " Each round decodes from fresh copies of both caches and weights; the speed table's decode ms/step is the "
        "absolute figure at the longest context."),
    "roofline": (
        "One point per variant, mode and shape. x: the variant's roofline time over the baseline's at the same shape "
        "(FLOPs and bytes of the work model at this run's measured ceilings); y: the variant's time over the "
        "baseline's from the same pairing, median. On the dashed diagonal the FLOPs and bytes the design choice "
        "moved explain the measured ratio; the baseline against itself (1 on both axes) is left out."),
    "prediction": (
        "Left, one point per variant, mode and shape: the calibrated model's time for the variant over its time for "
        "the baseline at the same shape, against the measured ratio (variant over baseline from the same pairing, "
        "median). Right, every timed point, the baseline's included: its predicted time against its measured median "
        "time, which carries the machine's drift between points. Dashed: prediction = measurement."),
    "training-curves": (
        "Each variant's loss against training step, mean over its seeds with a 95% bootstrap band. For one seed "
        "every variant trains on the same bytes in the same order and is scored on the same validation bytes (the "
        "quality table pairs the variants by seed); the bands are over seeds, not over those pairs."),
    "extrapolation": (
        "Each trained variant's validation loss at each evaluation length: every length and every variant predicts "
        "the same validation bytes, only the context differs. Mean over seeds with a 95% bootstrap band; a length a "
        "variant cannot evaluate (learned positions past their table) is named under the axis, not drawn."),
    "loss-by-position": (
        "Each variant's loss at each position of the same validation windows, one panel per evaluation length, mean "
        "over seeds with a 95% bootstrap band; the dashed line is the training context."),
    "multipliers": (
        "Training FLOPs the baseline needs to reach the variant's final loss, as a multiple of what the variant "
        "used, per seed on that seed's own curve of the baseline at several budgets; geometric mean over seeds with "
        "its 95% interval (log axis; dashed: 1×, no gain). A bar ending in a label is a bound: past the budgets "
        "trained. Grey: the known answers, each with the value (|) its interval must hold."),
    "k-vs-horizon": (
        "Each choice's multiplier in FLOPs at each training horizon of one width, against the baseline's training "
        "bytes per parameter (log axes; dashed: 1×, no gain); 95% intervals over seeds with the curve fit's "
        "left-out-knot error added. Each horizon has its own budget curve, so k is in that horizon's compute."),
    "cost-quality": (
        "x: the quality model's train-step time, variant over baseline, paired in one process (95% interval); y: the "
        "multiplier in steps (95% interval). On a dashed line the variant reaches the baseline's final loss that "
        "many times sooner in wall time; up and to the left is better."),
    "lr-scan": (
        "Each arm's final validation loss at every rate its learning-rate scan tried, mean over the scan seeds "
        "(log axis); the star is the rate chosen, at which the arm's evaluation seeds then trained. The y axis stops "
        "0.6 above the lowest loss, so a rate far off the best (or diverged) runs off the top."),
    "scale": (
        "Left: each variant's mean over seeds with its 95% Student-t interval at each quality-model width. Right: "
        "the variant minus the baseline trained at the same width, paired by seed, with the interval at the level "
        "Holm holds it to (it excludes 0 exactly when the verdict names a difference). x is each variant's own "
        "parameter count; every width trains on the same tokens."),
}


SUFFIXES = (".png", ".svg")  # what ``ablations.report.figures.save`` writes for each figure


def remove_stale(folder: Path, keep: Collection[Path] = ()) -> None:
    """Delete every figure file in ``folder`` that is not in ``keep``; other files stay."""
    for path in folder.glob("*"):
        if path.suffix in SUFFIXES and path not in keep:
            path.unlink()
