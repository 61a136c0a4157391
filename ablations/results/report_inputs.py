"""What a report prints that its rows do not hold, recorded beside them (``report_inputs.json``) when the sweep
starts: the harm a published "no worse" may still hide, each flip's train-step ratio at full size, and the machine's
calibration. The report reads these and the rows, never the configuration (``tests/report/test_reads_rows.py``);
``ablations.sweep.report_inputs`` writes them from the configuration."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ablations.results.durable import write_atomic

RECORD = "report_inputs.json"


@dataclass(frozen=True)
class ReportInputs:
    # The default quality run's target (nats per token): a published "no worse" agrees with a measured Δ only where
    # its upper end rules out a harm above it.
    no_worse_margin: float
    # The full-size model and machine the step ratios are predicted for ("llama2_7b on h100_sxm").
    full_size: str
    # Each flip's predicted train-step time over GPT-2's block at that size, by the flip's label.
    train_step_ratios: dict[str, float]
    # The calibrated performance model of the machine that ran the sweep (``roofline.hardware.Hardware``'s fields);
    # None where it has none.
    calibration: dict | None


def write_report_inputs(folder: Path, inputs: ReportInputs) -> None:
    write_atomic(Path(folder) / RECORD,
                 lambda f: f.write(json.dumps(asdict(inputs), indent=1, sort_keys=True).encode() + b"\n"))


def missing(folders: Sequence[Path]) -> str:
    """The line for rows with no record beside them, naming the command that writes one."""
    return (f"no {RECORD} beside the rows in {', '.join(map(str, folders))}: `python -m ablations.sweep.report_inputs "
            f"{folders[0]}` records this checkout's")


def read_report_inputs(folders: Sequence[Path]) -> ReportInputs | None:
    """The record beside the first of ``folders`` that holds one; None where none does."""
    for folder in folders:
        path = Path(folder) / RECORD
        if path.is_file():
            return ReportInputs(**json.loads(path.read_text()))
    return None
