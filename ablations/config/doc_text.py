"""Text the documentation shows that the code already knows, rendered from the code: sections of ``blockbench run
--help`` and the tables of the declared choices (every cell read from a ``Choice``).

A page asks for one by a marker line, ``<!-- generated: NAME -->`` (``SNIPPETS`` has the names):

- in ``docs/``, the marker alone: the mkdocs hook (``scripts/generated_docs.py``) puts the text in its place when
  the site is built, so the repository holds no copy to go stale;
- in the README, which GitHub shows as committed, the text between the marker and ``<!-- /generated -->``:
  ``python -m scripts.generated_docs`` writes it, and ``tests/test_docs.py`` fails when it differs.

The two places render one table differently only where their Markdown does: GitHub needs ``\\|`` for a pipe inside
a code span in a table, Python-Markdown (mkdocs) shows it literally.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ablations.config.help_page import help_node, value_marks
from blockbench import Choice, choices

END = "<!-- /generated -->"
# A marker line, then (in a committed page) the text it holds up to END, never reaching past another marker.
MARKER = re.compile(r"^<!-- generated: (?P<name>[\w-]+) -->[ \t]*(?:\n|\Z)"
                    r"(?P<held>(?:(?!<!-- generated:).)*?^<!-- /generated -->[ \t]*(?:\n|\Z))?", re.M | re.S)


class MissingText(KeyError):
    """A marker names no snippet, or a table needs what a declaration does not say; the message is the whole of
    it (a ``KeyError`` would quote it)."""

    def __str__(self) -> str:
        return self.args[0]


def help_section(title: str) -> str:
    """The lines of ``blockbench run --help``'s section ``== <title> ...``, as Hydra prints them (the section's
    text is literal in the template: nothing in it is interpolated)."""
    template = help_node()["template"]
    start = template.index(f"== {title}")
    body = template[template.index("\n", start) + 1:]
    return body[:body.index("\n\n")]


def _cell(text: str, github: bool) -> str:
    """A table cell: a pipe escaped outside code spans always, inside them only for GitHub."""
    parts = text.split("`")
    return "`".join(p.replace("|", "\\|") if i % 2 == 0 or github else p for i, p in enumerate(parts))


def _table(header: list[str], rows: list[list[str]], github: bool) -> str:
    lines = ["| " + " | ".join(_cell(text, github) for text in line) + " |" for line in [header, *rows]]
    return "\n".join([lines[0], "|" + "---|" * len(header), *lines[1:]])


def about(choice: Choice, key: str) -> str:
    """What value (or setting flip) ``key`` of ``choice`` is, from its declaration."""
    try:
        return choice.about[key]
    except KeyError:
        raise MissingText(f"choice {choice.group!r} does not say what {key!r} is: add it to the about= of its "
                             "declaration") from None


def choice_table(github: bool) -> str:
    """Every declared choice: GPT-2's value, Llama-2's, and how to select them (the README's and the home page's
    table)."""
    rows = []
    for choice in choices():
        select = ", ".join([f"`{choice.group}={'|'.join(choice.values)}`",
                            *(f"`{choice.group}.{key}` ({choice.shown(name)})"
                              for name, settings in choice.setting_flips.items() for key in settings)])
        rows.append([choice.title or choice.group, about(choice, choice.gpt2),
                     about(choice, choice.llama2) if choice.in_llama2 else "as GPT-2", select])
    return _table(["choice", "GPT-2 (baseline)", "Llama-2", "config group"], rows, github)


def _sources(choice: Choice) -> str:
    """The modules that declare ``choice`` and implement its values."""
    modules = [choice.config.__module__]
    modules += [cls.__module__ for v in choice.values if (cls := choice.registry.get(v)) is not None]
    return ", ".join(f"`{m.replace('.', '/')}.py`" for m in dict.fromkeys(modules))


def details_table(github: bool) -> str:
    """Every declared choice and named setting flip: its values, what each is, and where its code is (the Design
    choices page's table)."""
    rows = []
    for choice in choices():
        marks = value_marks(choice)
        values = ", ".join(f"`{v}` ({marks[v]})" if v in marks else f"`{v}`" for v in choice.values)
        rows.append([f"{choice.title or choice.group} (`{choice.group}`)", values,
                     "; ".join(about(choice, v) for v in choice.values), _sources(choice)])
        for name, settings in choice.setting_flips.items():
            flipped = ", ".join(f"`{choice.group}.{k}={v}`" for k, v in settings.items())
            rows.append([choice.shown(name), f"a setting of `{choice.group}` (`+sweep=modern`: {flipped})",
                         about(choice, name), f"`{choice.config.__module__.replace('.', '/')}.py`"])
    return _table(["choice", "values", "what each is", "source in the code"], rows, github)


def _fenced(text: str) -> str:
    return f"```text\n{text}\n```"


SNIPPETS: dict[str, Callable[[bool], str]] = {
    "run-help-sweeps": lambda github: _fenced(help_section("Sweeps")),
    "run-help-choices": lambda github: _fenced(help_section("Design choices")),
    "choice-table": choice_table,
    "choice-details": details_table,
}


def snippet(name: str, github: bool) -> str:
    if name not in SNIPPETS:
        raise MissingText(f"<!-- generated: {name} --> names no generated text; known: {', '.join(SNIPPETS)}")
    return SNIPPETS[name](github)


def names_in(markdown: str) -> list[str]:
    """The snippets a page's markers ask for, in order."""
    return [m["name"] for m in MARKER.finditer(markdown)]


def site_page(markdown: str) -> str:
    """A docs/ page as mkdocs builds it: each marker (and any text it held) replaced by its text."""
    return MARKER.sub(lambda m: snippet(m["name"], github=False) + "\n", markdown)


def committed_page(markdown: str) -> str:
    """A page GitHub shows as committed (the README): each marker kept, holding its current text up to END."""
    return MARKER.sub(lambda m: f"<!-- generated: {m['name']} -->\n{snippet(m['name'], github=True)}\n{END}\n",
                      markdown)
