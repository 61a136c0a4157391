"""The documentation under docs/ stays true to the code it describes.

- Every ``python -m MODULE`` shown in a fenced code block of docs/ names a module that exists
  (``importlib.util.find_spec``), and every ``blockbench COMMAND`` names a subcommand of the console script
  whose module exists (skipped while the script is not installed).
- Every page in docs/ is in mkdocs.yml's nav, and every page the nav names exists.
- The copies of ``python -m ablations --help``'s "Sweeps" and "Design choices" sections in docs/ (each marked by
  an HTML comment ``<!-- help:... -->`` before its fence) are what the code prints now.
- A Python block marked ``<!-- docs-test: run -->`` runs.

The broken-link and broken-anchor checks are mkdocs's own: ``mkdocs build --strict`` (CI runs it).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
SHELL = {"bash", "sh", "shell", "console", "zsh", ""}
# `python -m X`, `python3 -m X`, `.venv/bin/python -m X` anywhere on a command line.
PYTHON_M = re.compile(r"(?:^|[\s;&|(/])python(?:3(?:\.\d+)?)?\s+-m\s+([A-Za-z_][\w.]*)")
# `blockbench SUB` where a command starts: at the line's start, or after `&&`, `||`, `;`, `|`, `(` or `$(`.
BLOCKBENCH = re.compile(r"(?:^|&&|\|\||[;|(])\s*blockbench\s+(--?[\w-]+|[\w][\w-]*)")
MARKER = re.compile(r"<!--\s*([\w:-]+(?:\s*:\s*[\w-]+)?)\s*-->")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str  # the HTML comment right before the fence ("" if none)


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, with the marker comment on the line before each, if any."""
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        prev = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
        marker = MARKER.fullmatch(prev)
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        lang = info.split()[0].lower() if info else ""
        out.append(Block(page, i + 1, lang, "\n".join(body), marker.group(1).replace(" ", "") if marker else ""))
        i = j + 1
    return out


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]


def command_lines(block: Block) -> list[str]:
    """The command lines of a block: every line of a shell block (continuations joined); in any other block
    only lines typed at a ``$`` prompt (the rest is output)."""
    lines = block.text.replace("\\\n", " ").splitlines()
    prompted = [ln.strip()[2:] for ln in lines if ln.strip().startswith("$ ")]
    if block.lang in SHELL:
        return [ln[2:] if ln.startswith("$ ") else ln for ln in (x.strip() for x in lines)]
    return prompted


COMMENT = re.compile(r"(?:^|\s)#.*$")


def shown(pattern: re.Pattern, comments: bool = True) -> list[tuple[str, str]]:
    """(where, name) for every match of ``pattern`` in the docs' command lines; ``comments=False`` leaves out the
    text after a shell ``#`` (a ``python -m`` there is still a command a reader may copy; prose is not)."""
    found = []
    for b in ALL_BLOCKS:
        for line in command_lines(b):
            for name in pattern.findall(line if comments else COMMENT.sub("", line)):
                found.append((f"{b.page.relative_to(ROOT)}:{b.line}", name))
    return found


def test_the_docs_have_pages_and_commands():
    assert PAGES, "docs/ has no pages"
    assert shown(PYTHON_M), "no `python -m` command found in docs/: the parser is broken"


@pytest.mark.parametrize("module", sorted({name for _, name in shown(PYTHON_M)}))
def test_python_m_names_a_module_that_exists(module):
    where = [w for w, name in shown(PYTHON_M) if name == module]
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:  # a parent package is missing
        spec = None
    assert spec is not None, f"`python -m {module}` is shown in {', '.join(where)} but no module {module} exists"


def blockbench_installed() -> bool:
    here = Path(sys.executable).parent / "blockbench"
    return here.exists() or shutil.which("blockbench") is not None


BLOCKBENCH_SHOWN = sorted({name for _, name in shown(BLOCKBENCH, comments=False)})


@pytest.mark.parametrize("sub", BLOCKBENCH_SHOWN or ["(none shown)"])
def test_blockbench_names_a_command_that_exists(sub):
    if not BLOCKBENCH_SHOWN:
        pytest.skip("no `blockbench COMMAND` shown in docs/")
    if not blockbench_installed():
        pytest.skip("the blockbench console script is not installed (pip install -e .)")
    if sub.startswith("-"):
        assert sub in ("-h", "--help"), f"`blockbench {sub}`: blockbench takes only --help before a command"
        return
    from ablations.commands import COMMANDS

    where = [w for w, name in shown(BLOCKBENCH, comments=False) if name == sub]
    assert sub in COMMANDS, (f"`blockbench {sub}` is shown in {', '.join(where)} but blockbench has no such command; "
                             f"it has: {', '.join(COMMANDS)}")
    module = COMMANDS[sub].module
    assert importlib.util.find_spec(module) is not None, f"`blockbench {sub}` runs {module}, which does not exist"


def nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node] if node.endswith(".md") else []
    if isinstance(node, list):
        return [p for item in node for p in nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in nav_pages(value)]
    return []


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = nav_pages(config.get("nav"))
    pages = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert not pages - set(nav), f"pages in docs/ missing from mkdocs.yml's nav: {sorted(pages - set(nav))}"
    assert not set(nav) - pages, f"mkdocs.yml's nav names pages docs/ does not have: {sorted(set(nav) - pages)}"
    assert len(nav) == len(set(nav)), "mkdocs.yml's nav names a page twice"


def help_sections() -> dict[str, str]:
    """The "Sweeps" and "Design choices" sections of ``python -m ablations --help``, as the code renders them."""
    from ablations.config.generated import help_node

    template = help_node()["template"]

    def section(title: str) -> str:
        start = template.index(f"== {title}")
        body = template[template.index("\n", start) + 1:]
        return body[:body.index("\n\n==")].rstrip("\n")

    return {"help:sweeps": section("Sweeps"), "help:design-choices": section("Design choices")}


def test_help_copies_in_the_docs_match_the_code():
    sections = help_sections()
    marked = [b for b in ALL_BLOCKS if b.marker.startswith("help:")]
    assert {b.marker for b in marked} == set(sections), "each --help section should be copied once into docs/"
    for b in marked:
        assert b.text.rstrip("\n") == sections[b.marker], (
            f"{b.page.relative_to(ROOT)}:{b.line} copies `python -m ablations --help`'s {b.marker} section, which "
            f"now reads:\n{sections[b.marker]}\n(paste it over the block)")


RUNNABLE = [b for b in ALL_BLOCKS if b.marker == "docs-test:run"]


@pytest.mark.parametrize("block", RUNNABLE, ids=[f"{b.page.name}:{b.line}" for b in RUNNABLE])
def test_marked_python_blocks_run(block):
    assert block.lang == "python", f"{block.page.name}:{block.line}: only python blocks can be marked to run"
    exec(compile(block.text, f"{block.page.name}:{block.line}", "exec"), {"__name__": "docs_example"})
