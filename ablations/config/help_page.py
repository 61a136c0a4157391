"""``--help``'s page (``hydra/help/blockbench``): the usage, every sweep with its line, and each design choice's values
with which model takes which."""

from __future__ import annotations

from typing import Any

from ablations.config.generated_sweeps import sweep_lines
from blockbench import Choice, choices

HELP_HEADER = """blockbench run (python -m ablations)
What each GPT-2 -> Llama-2 block design choice buys: every variant timed paired against the GPT-2 block
(latency, memory, FLOPs, decode), and a small byte-level LM trained per seed for the loss.
"""
HELP_FOOTER = """Bad input stops before any work with one line and exit status 2; a point that fails is recorded and the
sweep goes on (exit status 1); a fault of the disk or the corpus during the run stops it with one line
(exit status 1), and a rerun into the same folder (hydra.sweep.dir=DIR) skips the points already written.
More in README.md; Hydra's own flags: --hydra-help.
"""


def value_marks(choice: Choice) -> dict[str, str]:
    """Which model takes which value, as ``--help`` and the docs' choice tables mark it."""
    if not choice.in_llama2:
        return {choice.gpt2: "GPT-2, the baseline; neither model varies it"}
    return {choice.gpt2: "GPT-2", choice.llama2: "Llama-2"}


def values_text(choice: Choice) -> str:
    marks = value_marks(choice)
    return ", ".join(f"{v} ({marks[v]})" if v in marks else v for v in choice.values)


def help_node() -> dict[str, Any]:
    lines = sweep_lines()
    width = max(map(len, lines)) + 2
    sweeps_text = "\n".join(f"  {name:<{width}} {what}" for name, what in lines.items())
    choice_text = "\n".join(f"  {choice.group:<{width}} {values_text(choice)}" for choice in choices())
    template = (
        "${hydra.help.header}\n"
        "Usage: blockbench run [+sweep=NAME] [GROUP=OPTION ...] [KEY=VALUE ...] [hydra.sweep.dir=DIR]\n"
        "       blockbench run -m GROUP=A,B KEY=X,Y ...     (any grid, Hydra's own syntax)\n\n"
        "== Sweeps (+sweep=NAME; each runs all its points, no -m needed) ==\n"
        f"{sweeps_text}\n\n"
        "== Design choices (each a group: GROUP=OPTION) ==\n"
        f"{choice_text}\n\n"
        "== Configuration groups (GROUP=OPTION) ==\n"
        "$APP_CONFIG_GROUPS\n"
        "== Config (override any key: KEY=VALUE; profile=smoke runs the whole path in seconds) ==\n"
        "$CONFIG\n"
        "${hydra.help.footer}"
    )
    return {"app_name": "blockbench", "header": HELP_HEADER, "footer": HELP_FOOTER, "template": template}
