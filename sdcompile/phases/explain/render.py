"""Rendering of `sdcompile explain`, and the Markdown of docs/mismatch-catalog.md (written by catalog_page)."""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape

from sdcompile.phases.explain.results import GuideText, MismatchExplanation, MismatchText, TopicList
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.tables import FitTable

_PATHS = {"A": "path A — edit the pattern", "B": "path B — another carrier (a weight as a pattern input, or a "
                                                 "GraphPatternEntry)"}


def render_explain(console: Console, result) -> None:
    if isinstance(result, TopicList):
        table = FitTable(title="sdcompile explain TOPIC [ITEM]")
        for col in ("topic", "what", "items"):
            table.add_column(col, overflow="fold")
        for t in result.topics:
            table.add_row(t.topic, escape(t.title), ", ".join(t.items) or "—")
        console.print(table)
    elif isinstance(result, MismatchExplanation) and result.kind == "mismatch-list":
        table = FitTable(title="The seven mismatch types (sdcompile explain mismatch N)", head=2)
        for col in ("type", "name", "fix", "summary"):
            table.add_column(col, overflow="fold")
        for t in result.types:
            table.add_row(str(t.number), t.name, _PATHS[t.path], escape(t.summary))
        console.print(table)
    elif isinstance(result, MismatchExplanation):
        for t in result.types:
            console.print(Markdown(_type_markdown(t, heading="#")))
    elif isinstance(result, GuideText):
        console.print(Markdown(result.markdown))
    close(console, verdict(result))


def verdict(result) -> Verdict:
    """The closing line: what was shown and where it lives."""
    return Verdict("INFO", _shown(result))


def _shown(result) -> str:
    if isinstance(result, TopicList):
        return f"{len(result.topics)} topics; sdcompile explain TOPIC [ITEM] shows one"
    if isinstance(result, MismatchExplanation) and result.kind == "mismatch-list":
        return f"{len(result.types)} mismatch types; sdcompile explain mismatch N shows one"
    if isinstance(result, MismatchExplanation):
        shown = ", ".join(f"type {t.number} ({t.name})" for t in result.types)
        return f"mismatch {shown}" + (f"; the same text: {result.doc}" if result.doc else "")
    return f"{result.title}: {result.path}"


def _type_markdown(t: MismatchText, heading: str = "##") -> str:
    lines = [
        f"{heading} Type {t.number}: {t.name}",
        "",
        f"*{t.summary}* Fix by {_PATHS[t.path]}.",
        "",
        t.explanation,
        "",
        f"**Evidence in the aligned graphs.** {t.evidence}",
        "",
        f"**Fix.** {t.fix}",
        "",
        f"**Example** (as `sdcompile debug` words it): {t.example}",
        "",
        "| cause (debug's name) | when | what debug tells you to do |",
        "|---|---|---|",
    ]
    for c in t.causes:
        if c.torch_range and c.fix_otherwise:
            lines.append(f"| `{c.key}` | {c.when} (torch {c.torch_range}) | {_cell(c.fix)} |")
            lines.append(f"| `{c.key}` | the same, on torch outside {c.torch_range} | {_cell(c.fix_otherwise)} |")
        else:
            lines.append(f"| `{c.key}` | {c.when} | {_cell(c.fix)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def catalog_markdown(result: MismatchExplanation) -> str:
    """docs/mismatch-catalog.md: every type of `explain("mismatch")`, from catalogs/mismatches.toml."""
    parts = [
        "<!-- Generated from sdcompile/catalogs/mismatches.toml by "
        "`python -m sdcompile.phases.explain.catalog_page > docs/mismatch-catalog.md`; "
        "tests/debug/test_debug_docs.py fails when it is stale. Edit the catalog, not this file. -->",
        "",
        "# Mismatch catalog",
        "",
        "Why a fusion pattern does not replace anything in a model graph: seven types, each with the evidence "
        "that identifies it when pattern and model are aligned node by node from the pattern's output, and the "
        "fix. `sdcompile debug` classifies the first differing node pair into one of them; "
        "`sdcompile explain mismatch N` shows one type. Types 1-5 are fixed by editing the pattern (path A), "
        "type 6 needs another carrier matched before freezing (path B: the weight as a pattern input, or a "
        "GraphPatternEntry written from the graph; custom graph passes are forbidden upstream), type 7 is the "
        "silent failure that only a hit count on the model graph reveals.",
        "",
        "In a fix, placeholders such as `{model_op}` are filled in by `sdcompile debug` from the aligned nodes.",
        "",
        "| type | name | fix by | summary |",
        "|---|---|---|---|",
    ]
    for t in result.types:
        parts.append(f"| {t.number} | {t.name} | {_PATHS[t.path]} | {t.summary} |")
    parts.append("")
    for t in result.types:
        parts.append(_type_markdown(t))
    return "\n".join(parts).rstrip() + "\n"

