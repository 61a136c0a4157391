"""``blockbench list`` (``python -m ablations.tools.catalog``): every sweep, design choice and value, one line each,
from the declarations (plugins named with ``plugins=[...]`` or installed included). ``ls conf/sweep`` shows only the
sweeps written as files; this shows the generated ones too.

    sweep   norm            layernorm vs rmsnorm on the GPT-2 block
    choice  norm            layernorm (GPT-2), rmsnorm (Llama-2)
    value   norm=rmsnorm    RMS only, weight, no mean
"""

from __future__ import annotations

import argparse
import sys

from ablations.config.command_start import load, take_plugins
from ablations.config.errors import command, prog


def catalog_lines() -> list[str]:
    """The lines ``blockbench list`` prints: sweeps, then each choice and each of its values."""
    from ablations.config.generated_sweeps import sweep_lines
    from ablations.config.help_page import values_text
    from blockbench import choices

    entries = [("sweep", name, what) for name, what in sweep_lines().items()]
    for choice in choices():
        entries.append(("choice", choice.group, values_text(choice)))
        entries += [("value", f"{choice.group}={value}", choice.about.get(value, ""))
                    for value in choice.values]
    width = max(len(name) for _, name, _ in entries) + 2
    return [f"{kind:<7} {name:<{width}} {what}".rstrip() for kind, name, what in entries]


@command("list")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("list"), description=__doc__.split("\n\n")[0])
    parser.parse_args(take_plugins(list(sys.argv[1:] if argv is None else argv)))
    load()
    print("\n".join(catalog_lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
