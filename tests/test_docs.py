"""The documentation under docs/ stays true to the code it describes.

- Every ``python -m MODULE`` shown in a fenced code block of docs/ names a module that exists
  (``importlib.util.find_spec``), and every ``blockbench COMMAND`` names a subcommand of the console script
  whose module exists (skipped while the script is not installed).
- Every page in docs/ is in mkdocs.yml's nav, and every page the nav names exists.
- Text the code knows is generated, not copied (``ablations.config.doc_text``): the mkdocs hook puts
  ``python -m ablations --help``'s "Sweeps" and "Design choices" sections and the choice tables where docs/ pages
  mark them (``<!-- generated: NAME -->``), and the README's marked text is what the declarations give now.
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

from blockbench import choices
from tests.temporary_choice import temporary_choice

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


README = ROOT / "README.md"


def page_text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def help_sections() -> dict[str, str]:
    """The "Sweeps" and "Design choices" sections of ``python -m ablations --help``, as the code renders them, by
    the marker name that asks for each."""
    from ablations.config.help_page import help_node

    template = help_node()["template"]

    def section(title: str) -> str:
        start = template.index(f"== {title}")
        body = template[template.index("\n", start) + 1:]
        return body[:body.index("\n\n==")].rstrip("\n")

    return {"run-help-sweeps": section("Sweeps"), "run-help-choices": section("Design choices")}


def built(page: Path) -> str:
    """A page as the site is built from it: through the mkdocs hook."""
    from scripts.generated_docs import on_page_markdown

    return on_page_markdown(page_text(page), page=None, config=None, files=None)


def test_mkdocs_runs_the_hook_that_fills_the_markers():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert "scripts/generated_docs.py" in config.get("hooks", [])


def test_every_marker_names_generated_text_and_each_is_asked_for_where_the_docs_need_it():
    from ablations.config.doc_text import SNIPPETS, names_in
    from scripts.generated_docs import on_page_markdown  # noqa: F401  (the hook registers the report's snippets)

    asked = {page.relative_to(ROOT).as_posix(): names_in(page_text(page)) for page in [*PAGES, README]}
    unknown = {page: names for page, names in asked.items() if set(names) - set(SNIPPETS)}
    assert not unknown, f"markers that name no generated text (known: {', '.join(SNIPPETS)}): {unknown}"
    assert asked["README.md"] == ["choice-table"] and asked["docs/index.md"] == []  # the home page links the README
    assert asked["docs/choices.md"] == ["run-help-choices", "choice-details"]
    assert asked["docs/methodology.md"] == ["run-help-sweeps"]
    assert asked["docs/glossary.md"] == ["glossary"] and asked["docs/results.md"] == ["summary-schema"]


def test_the_hook_puts_the_current_help_into_the_pages():
    from ablations.config.doc_text import names_in

    for name, section in help_sections().items():
        pages = [p for p in PAGES if name in names_in(page_text(p))]
        assert len(pages) == 1, f"--help's {name} should be asked for once in docs/, not in {pages}"
        assert section not in page_text(pages[0]), f"{pages[0].name} holds a copy of --help's {name}: use the marker"
        text = built(pages[0])
        assert f"\n```text\n{section}\n```\n" in text, f"the built {pages[0].name} lacks --help's {name} as it is now"
        assert not names_in(text), f"the built {pages[0].name} still has a marker"


def test_a_marker_that_names_nothing_stops_the_build_with_one_line():
    pytest.importorskip("mkdocs")  # the docs extra's
    from types import SimpleNamespace

    from mkdocs.exceptions import PluginError

    from scripts.generated_docs import on_page_markdown

    page = SimpleNamespace(file=SimpleNamespace(src_path="index.md"))
    with pytest.raises(PluginError) as err:
        on_page_markdown("# Home\n\n<!-- generated: choice-tabel -->\n", page=page)
    assert str(err.value).startswith("index.md: <!-- generated: choice-tabel --> names no generated text; known: ")
    assert "\n" not in str(err.value) and "choice-table" in str(err.value)


def test_the_readme_holds_what_the_declarations_give():
    from ablations.config.doc_text import committed_page

    text = page_text(README)
    assert committed_page(text) == text, ("README.md's generated text is not what the declarations give now: run "
                                          "`python -m scripts.generated_docs`")


def test_the_script_rewrites_a_stale_readme(tmp_path, capsys):
    from ablations.config.doc_text import choice_table
    from scripts.generated_docs import main

    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- generated: choice-table -->\n| stale |\n<!-- /generated -->\n\nafter\n")
    assert main([], readme=readme) == 0 and "rewritten" in capsys.readouterr().out
    text = readme.read_text()
    table = choice_table(github=True)
    assert text == f"# x\n\n<!-- generated: choice-table -->\n{table}\n<!-- /generated -->\n\nafter\n"
    assert main([], readme=readme) == 0 and "up to date" in capsys.readouterr().out


CELL = re.compile(r"(?<!\\)\|")  # a cell separator: a pipe GitHub does not read as escaped


def github_rows(table: str) -> list[list[str]]:
    """A table's body rows as GitHub splits them into cells, each cell's escaped pipes read back."""
    return [[cell.strip().replace("\\|", "|") for cell in CELL.split(line)[1:-1]] for line in table.splitlines()[2:]]


def test_the_choice_tables_show_every_declared_choice_and_value():
    from ablations.config.doc_text import choice_table, details_table

    flips = [(choice, name) for choice in choices() for name in choice.setting_flips]
    for render, n_rows in ((choice_table, len(choices())), (details_table, len(choices()) + len(flips))):
        rows = github_rows(render(github=True))
        assert len(rows) == n_rows and all(len(r) == 4 for r in rows), render.__name__
    readme_rows = github_rows(choice_table(github=True))
    for choice, row in zip(choices(), readme_rows, strict=True):
        assert row[1] == choice.about[choice.gpt2] and row[2] == (
            choice.about[choice.llama2] if choice.in_llama2 else "as GPT-2")
        assert row[3].startswith(f"`{choice.group}={'|'.join(choice.values)}`")
    details = {row[0]: row for row in github_rows(details_table(github=True))}
    for choice in choices():
        row = details[f"{choice.title} (`{choice.group}`)"]
        assert all(f"`{v}`" in row[1] for v in choice.values) and all(choice.about[v] in row[2] for v in choice.values)
        assert f"`{choice.config.__module__.replace('.', '/')}.py`" in row[3]
    assert all(choice.about[name] == details[choice.shown(name)][2] for choice, name in flips)


def test_the_site_renders_the_choice_tables_with_their_pipes():
    markdown = pytest.importorskip("markdown")  # the docs extra's
    from ablations.config.doc_text import choice_table

    html = markdown.markdown(choice_table(github=False), extensions=["tables"])
    assert html.count("<tr>") == len(choices()) + 1 and html.count("<td>") == 4 * len(choices())
    assert "<code>pos=learned|rope|alibi|none</code>" in html and "\\|" not in html


def test_a_newly_declared_choice_joins_both_tables():
    from ablations.config.doc_text import choice_table, details_table

    with temporary_choice(llama2="on") as extra:
        short = {row[0]: row for row in github_rows(choice_table(github=True))}["extra thing"]
        long = {row[0]: row for row in github_rows(details_table(github=True))}["extra thing (`extra`)"]
    assert short == ["extra thing", "no extra thing", "the extra thing, switched on", "`extra=off|on`"]
    assert long == ["extra thing (`extra`)", "`off` (GPT-2), `on` (Llama-2)",
                    "no extra thing; the extra thing, switched on", "`tests/temporary_choice.py`"]
    assert extra.title not in choice_table(github=True)
    with temporary_choice(about={"off": "no extra thing"}):
        with pytest.raises(KeyError, match="'extra' does not say what 'on' is"):
            details_table(github=False)


RUNNABLE = [b for b in ALL_BLOCKS if b.marker == "docs-test:run"]


@pytest.mark.parametrize("block", RUNNABLE, ids=[f"{b.page.name}:{b.line}" for b in RUNNABLE])
def test_marked_python_blocks_run(block):
    assert block.lang == "python", f"{block.page.name}:{block.line}: only python blocks can be marked to run"
    exec(compile(block.text, f"{block.page.name}:{block.line}", "exec"), {"__name__": "docs_example"})
