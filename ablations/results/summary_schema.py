"""The shape of ``summary.json``, the report's verdicts for programs: ``SCHEMA`` (JSON Schema), versioned by
``VERSION``. ``ablations.report.summary_json`` writes the file; ``ablations.tools.compare_summaries`` reads two."""

from __future__ import annotations

from typing import Any

# What a time ratio's interval allows on its device (``ablations.report.verdicts.time_kind``); "no verdict" where the
# step is overhead-bound and did not move as its bytes do.
FASTER, SLOWER, NO_DIFFERENCE, OVERHEAD = "faster", "slower", "no measurable difference", "no verdict"
READINGS = (FASTER, SLOWER, NO_DIFFERENCE, OVERHEAD)
SUMMARY = "summary.json"
VERSION = 1
_NUMBER_OR_NULL = {"type": ["number", "null"]}
_RATIO = {
    "type": "object",
    "required": ["value", "lo", "hi", "device", "reading", "note"],
    "additionalProperties": False,
    "properties": {"value": {"type": "number"}, "lo": {"type": "number"}, "hi": {"type": "number"},
                   "device": {"type": "string"},
                   "reading": {"enum": list(READINGS)},
                   "note": {"type": "string", "description": "why the ratio may not measure the choice"}},
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "blockbench summary",
    "type": "object",
    "required": ["schema_version", "sweeps", "smoke", "choices"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": VERSION},
        "sweeps": {"type": "array", "items": {"type": "string"}},
        "smoke": {"type": "boolean", "description": "a smoke run: no verdicts, numbers not for quoting"},
        "choices": {"type": "array", "items": {
            "type": "object",
            "required": ["choice", "sweeps", "train_step", "decode_step", "loss"],
            "additionalProperties": False,
            "properties": {
                "choice": {"type": "string", "description": "the flip of GPT-2's block, as the report names it"},
                "sweeps": {"type": "array", "items": {"type": "string"}},
                "train_step": {"type": "array", "items": _RATIO, "description": "variant over baseline, per device"},
                "decode_step": {"type": "array", "items": _RATIO},
                "loss": {"oneOf": [{"type": "null"}, {
                    "type": "object",
                    "required": ["diff", "lo", "hi", "verdict", "seeds", "unit", "regime", "compute_multiplier"],
                    "additionalProperties": False,
                    "properties": {
                        "diff": {"type": "number"}, "lo": _NUMBER_OR_NULL, "hi": _NUMBER_OR_NULL,
                        "verdict": {"type": "string"}, "seeds": {"type": "integer"}, "unit": {"type": "string"},
                        "regime": {"type": "string"},
                        "compute_multiplier": {"type": ["string", "null"], "description":
                                               "k in FLOPs, its interval at the same Holm level as lo and hi"},
                    }}]},
            }}},
    },
}
