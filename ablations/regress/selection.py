"""Which cases a check runs: the case set and ``-k`` patterns, with a plugin's cases alone by default, and what to
say of a pattern that matches no case."""

from __future__ import annotations

import argparse
import sys

from ablations.config.errors import UsageError, prog
from ablations.regress.cases import Case, all_cases, select

PROG = prog("regress")


def chosen_cases(args: argparse.Namespace) -> list[Case]:
    cases = select(args.cases, args.patterns)
    if args.plugin and not args.all_cases:
        cases = [case for case in cases if plugin_case(case, args.plugin_modules)]
    unmatched = [p for p in args.patterns if not select(args.cases, [p])]
    if not cases:
        names = ", ".join(case.name for case in all_cases()[:3])
        hint = segment_hint(args.cases, unmatched)
        raise UsageError(f"-k {' -k '.join(args.patterns)} matches no case of --cases {args.cases}{hint} "
                         f"(names look like {names}, ...; --list prints them all)")
    for pattern in unmatched:  # the others matched: the check runs, and says what this one left out
        print(f"{PROG}: -k {pattern} matches no case of --cases {args.cases}{segment_hint(args.cases, [pattern])}",
              file=sys.stderr)
    return cases


def segment_hint(case_set: str, patterns: list[str]) -> str:
    """For patterns that match no case in whole segments but are part of a name: how to ask for a part of a segment
    (``-k '*llama*'``: a pattern matches whole segments)."""
    names = [case.name for case in select(case_set)]
    parts = [p for p in patterns if p and any(p in n for n in names)]
    if not parts:
        return ""
    globs = " ".join(f"-k '*{p}*'" for p in parts)
    return f"; -k matches whole segments of a name, so for a part of one: {globs}"


def plugin_case(case: Case, modules: list[str]) -> bool:
    """Whether ``case`` takes a choice or value the plugin (its ``modules``) declares."""
    from components.plugins import shaping

    values = {k: str(v) for k, v in case.overrides.items() if "." not in k and k != "kv"}
    return any(p.module in modules for p in shaping(values))
