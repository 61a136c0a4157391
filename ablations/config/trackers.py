"""The trackers a finished sweep may be logged to (``+logger=NAME``, ``ablations.track``), declared once: the
schema's allowed names derive from it, ``ablations.track`` takes each one's package and writer from it, and
conf/logger/<name>.yaml holds each one's settings (tests/track checks that the three agree)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tracker:
    package: str  # what it needs installed (the [track] extra)
    # Its writer, a module with ``log_config(plan, folder, logger, sweep_name) -> str`` (where the sweep went).
    module: str


TRACKERS = {
    "mlflow": Tracker("mlflow", "ablations.track.to_mlflow"),
    "tensorboard": Tracker("tensorboard", "ablations.track.to_tensorboard"),
}
