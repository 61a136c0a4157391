"""``summary.json`` beside every REPORT.md: the verdict block's answers for programs (``ablations.report.verdicts``).

Per choice: the sweeps it was read from, the train-step and decode-step time ratios per device, the final loss
difference (interval, verdict, seeds, regime) and the compute multiplier's text, each as the report shows it. The
file's shape is ``ablations.results.summary_schema.SCHEMA`` (versioned by ``VERSION``; docs/results.md shows it), and
``blockbench compare OLD.json NEW.json`` reads two of them (``ablations.tools.compare_summaries``).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ablations.report.verdicts import Answer, Ratio, time_kind
from ablations.results.durable import write_atomic
from ablations.results.summary_schema import SCHEMA, SUMMARY, VERSION


def _ratio(r: Ratio) -> dict[str, Any]:
    return {"value": r.value, "lo": r.lo, "hi": r.hi, "device": r.device, "reading": time_kind(r), "note": r.note}


def _finite(x: float) -> float | None:
    return None if x is None or math.isnan(x) else x


def summary_of(found: list[Answer], sweeps: list[str], smoke: bool) -> dict[str, Any]:
    """The file's content: every answer the verdict block reads (all of them, not only the block's first lines)."""
    choices = []
    for a in found:
        loss = None
        if a.loss is not None:
            fields = asdict(a.loss)
            loss = {"diff": fields["diff"], "lo": _finite(fields["lo"]), "hi": _finite(fields["hi"]),
                    "verdict": "withheld (smoke profile)" if smoke else fields["verdict"], "seeds": fields["seeds"],
                    "unit": fields["unit"], "regime": a.loss.regime, "compute_multiplier": fields["k"]}
        choices.append({"choice": a.choice, "sweeps": list(a.sweeps), "train_step": [_ratio(r) for r in a.train],
                        "decode_step": [_ratio(r) for r in a.decode], "loss": loss})
    return {"schema_version": VERSION, "sweeps": sweeps, "smoke": smoke, "choices": choices}


def write_summary(folder: Path, content: dict[str, Any]) -> Path:
    path = Path(folder) / SUMMARY
    text = json.dumps(content, indent=1, ensure_ascii=False) + "\n"
    write_atomic(path, lambda f: f.write(text.encode()))
    return path


def schema_text() -> str:
    """The schema as docs/results.md shows it."""
    return "```json\n" + json.dumps(SCHEMA, indent=1) + "\n```"
