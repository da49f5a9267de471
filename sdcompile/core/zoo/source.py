"""The complete source of an implementation, with the lines the model's forward ran through."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass

from sdcompile.core.zoo.locate import Located
from sdcompile.util.source_paths import short_path


@dataclass(frozen=True)
class SourceExtract:
    file: str  # absolute path
    short_file: str  # "diffusers/models/normalization.py"
    first_line: int
    last_line: int
    text: str  # the class or function source, dedented
    lines_run: tuple[int, ...]  # absolute line numbers executed by the forward
    marked: tuple[int, ...]  # inline implementations: the lines that compute the primitive

    @property
    def location(self) -> str:
        return f"{self.short_file}:{self.first_line}-{self.last_line}"


def extract_source(located: Located, lines: dict) -> SourceExtract | None:
    """Source of the class / function (for inline code: the whole enclosing function). None when Python has
    no source for it (e.g. a builtin)."""
    try:
        source_lines, first = inspect.getsourcelines(located.obj)
    except (OSError, TypeError):
        return None
    first = max(first, 1)
    last = first + len(source_lines) - 1
    ran: set[int] = set()
    for code in located.codes:
        ran.update(n for n in lines.get(code, ()) if first <= n <= last)
    return SourceExtract(
        file=located.file,
        short_file=short_path(located.file),
        first_line=first,
        last_line=last,
        text=textwrap.dedent("".join(source_lines)),
        lines_run=tuple(sorted(ran)),
        marked=tuple(located.lines),
    )


def line_ranges(lines) -> str:
    """(541, 542, 543, 554, 556) -> "541-543, 554, 556"."""
    out: list[str] = []
    run: list[int] = []
    for n in sorted(set(lines)):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [n]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def render_snippet(located: Located, extract: SourceExtract, versions: str, model: str) -> str:
    """A snippet file: a comment header (what, where, which lines ran) and the verbatim source, so the file
    stays valid Python a pattern author can read next to the graph."""
    sites = ", ".join(s.path or "(the model itself)" for s in located.sites[:8])
    more = f" (+{len(located.sites) - 8} more)" if len(located.sites) > 8 else ""
    header = [
        f"# {located.op}: {located.display_name} ({located.kind}, {located.scope})",
        f"# qualified name: {located.qualified_name}",
        f"# source: {extract.location} ({versions})",
        f"# model: {model}; sites ({len(located.sites)}): {sites}{more}",
        f"# lines run by this model's forward: {line_ranges(extract.lines_run) or 'none recorded'}",
    ]
    if extract.marked:
        header.append(f"# lines computing the {located.op}: {line_ranges(extract.marked)}")
    if located.form:
        header.append(f"# form: {located.form}")
    header.append("# (written by `sdcompile analyze`; the code below is the verbatim source)")
    return "\n".join(header) + "\n\n" + extract.text
