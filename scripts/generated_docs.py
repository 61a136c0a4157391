"""Generated text into the pages that show it (``ablations.config.doc_text`` renders it from the code).

As the mkdocs hook (``hooks:`` in mkdocs.yml), it fills every ``<!-- generated: NAME -->`` marker of a docs/ page
as the site is built. Run as a script, it rewrites the text the README's markers hold (GitHub shows the README as
committed; ``tests/test_docs.py`` fails when it is stale):

    python -m scripts.generated_docs            # README.md, in place; says whether it changed
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# This checkout's code, not whichever copy of the packages the environment has installed: the site and the README
# describe the tree they are built from.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ablations.config.doc_text import SNIPPETS, committed_page, site_page  # noqa: E402
from ablations.report.glossary import glossary_markdown  # noqa: E402
from ablations.report.summary_json import schema_text  # noqa: E402

# Text the report's modules render, registered here: the configuration layer that holds the other snippets may not
# import the report's.
SNIPPETS.update({"glossary": lambda github: glossary_markdown(), "summary-schema": lambda github: schema_text()})

README = ROOT / "README.md"


def on_page_markdown(markdown: str, page: Any = None, **_: Any) -> str:
    """mkdocs's page event: the page's markers replaced by their text. A marker that names no text, or a choice
    that does not say what a value is, stops the build with one line naming the page."""
    try:
        return site_page(markdown)
    except KeyError as err:
        from mkdocs.exceptions import PluginError  # only the hook runs under mkdocs

        raise PluginError(f"{page.file.src_path if page is not None else 'a page'}: {err}") from None


def main(argv: list[str] | None = None, readme: Path = README) -> int:
    argparse.ArgumentParser(prog="python -m scripts.generated_docs",
                            description="Rewrite the generated text the README's markers hold.").parse_args(argv)
    now = readme.read_text(encoding="utf-8")
    fresh = committed_page(now)
    if fresh == now:
        print(f"{readme.name}: up to date")
        return 0
    readme.write_text(fresh, encoding="utf-8")
    print(f"{readme.name}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
