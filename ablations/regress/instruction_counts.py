"""Each counted case's instructions per call on both sides (``ablations.regress.callgrind``), added to its row with
a verdict at ``--callgrind-threshold``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ablations.config.errors import prog
from ablations.regress import callgrind
from ablations.regress.trees import Tree

PROG = prog("regress")


def count_instructions(rows: list[dict], base: Tree, head: Tree, args: argparse.Namespace, out: Path) -> str:
    """Adds ``callgrind`` to each counted row; returns the sentence the summary says about it."""
    names = [r["name"] for r in rows if r["counted"] and "ratio" in r]  # timed and compared
    if args.no_callgrind:
        return "Instruction counts: off (--no-callgrind)."
    missing = callgrind.available()
    if missing:
        print(f"{PROG}: callgrind unavailable ({missing}): timing alone", file=sys.stderr)
        return f"Instruction counts: not measured ({missing}); timing alone."
    if not names:
        return "Instruction counts: no counted case (norm and pos forward, attn decode) selected."
    procs = {t.label: (callgrind.start(t.root, names, out / f"callgrind-{t.label}"), out / f"callgrind-{t.label}")
             for t in (base, head)}
    try:
        counts = {label: callgrind.finish(proc, folder) for label, (proc, folder) in procs.items()}
    except RuntimeError as exc:  # valgrind's fault, not the code's: the timing verdicts already taken still stand
        print(f"{PROG}: callgrind failed ({exc}): timing alone", file=sys.stderr)
        return f"Instruction counts: failed ({exc}); timing alone."
    limit = 1 + args.callgrind_threshold / 100
    for r in rows:
        b, h = counts["base"].get(r["name"]), counts["head"].get(r["name"])
        if b and h:
            ratio = h / b
            r["callgrind"] = {"base": b, "head": h, "ratio": ratio,
                              "verdict": "regression" if ratio > limit else
                              "improvement" if ratio < 2 - limit else "unchanged"}
    return (f"Instructions per call (callgrind; norm and pos forward, attn decode): a regression above 1 + "
            f"{args.callgrind_threshold:g}%.")
