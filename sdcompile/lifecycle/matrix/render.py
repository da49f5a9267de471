"""Rendering of `sdcompile matrix`: the table (a row per model, a column per op and torch), the cells that did not
pass with where and why, what changed since --compare's table, and one verdict line; the same table as Markdown."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from sdcompile.lifecycle.matrix.results import Cell, MatrixReport, Outcome
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line
from sdcompile.util.log import verbosity

SHOWN = 10  # cells that did not pass, listed with their reason (-v: all)
_SHORT = {Outcome.REUSED: "reused", Outcome.ALREADY_FUSED: "fused already", Outcome.NO_SITE: "no site",
          Outcome.DEAD_END: "dead end", Outcome.NPU_KERNEL: "NPU kernel fails", Outcome.REFUSED: "refused",
          Outcome.CRASHED: "crashed", Outcome.TIMED_OUT: "timed out"}


def cell_text(cell: Cell) -> str:
    """A cell as the table shows it: its outcome, and fused calls in the graph / fused launches per step when
    integrate ran."""
    if cell.outcome is Outcome.GENERATED:
        word = f"generated: {cell.carrier or 'group'}"
    elif cell.outcome is Outcome.FAILS:
        word = f"fails at {cell.phase}"
    else:
        word = _SHORT[cell.outcome]
    if cell.fused_nodes is not None and cell.fused_launches is not None:
        word += f" {cell.fused_nodes}/{cell.fused_launches:g}"
    return word


def columns(report: MatrixReport) -> list[tuple[str, str]]:
    """(op, torch) per column: one per op, per torch when the table holds several."""
    torches = list(dict.fromkeys(c.torch for c in report.cells))
    return [(op, t) for op in report.ops for t in torches]


def grid(report: MatrixReport) -> list[tuple[str, list[Cell | None]]]:
    by_key = {c.key: c for c in report.cells}
    cols = columns(report)
    rows = []
    for model in report.models:
        cells = [by_key.get((model, op, t)) for op, t in cols]
        if any(cells):
            rows.append((model, cells))
    return rows


def column_heading(op: str, torch: str, several: bool) -> str:
    return f"{op} (torch {torch})" if several else op


def render_matrix(console: Console, report: MatrixReport) -> None:
    cols = columns(report)
    several = len({t for _op, t in cols}) > 1
    what = f"shard {report.shard}" if report.shard else ("merged from " + ", ".join(report.merged_from)
                                                         if report.merged_from else "the whole table")
    per_cell = ("`sdcompile run` per cell ({what}); figures: fused calls in the graph / fused launches per step"
                if report.until == "run" else "`sdcompile scaffold --dry-run` per cell ({what})").format(what=what)
    table = FitTable(title=f"Fusion coverage, {per_cell}", title_justify="left", show_edge=False)
    table.add_column("model")
    for op, t in cols:
        table.add_column(column_heading(op, t, several))
    for model, cells in grid(report):
        table.add_row(escape(model), *(escape(cell_text(c)) if c else "-" for c in cells))
    console.print(table)
    _not_passing(console, report)
    _changes(console, report)
    console.print(f"target: {report.target}; cells in {report.folder}", highlight=False)
    console.print(versions_line(report.versions, target=False), highlight=False)
    close(console, verdict(report))


def _not_passing(console: Console, report: MatrixReport) -> None:
    failing = [c for c in report.cells if not c.passed]
    if not failing:
        return
    shown = failing if verbosity() else failing[:SHOWN]
    more = f", {len(shown)} shown (-v: all)" if len(shown) < len(failing) else ""
    console.print(f"Cells that did not pass ({len(failing)}{more}):", highlight=False)
    for c in shown:
        where = f" at {c.phase}" if c.phase else ""
        console.print(f"  {escape(c.model)} × {c.op}: {c.outcome}{where}: {escape(_first_line(c.why))}",
                      highlight=False)
        if c.report:
            console.print(f"    report: {escape(str(Path(report.folder) / c.report))}", highlight=False)


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "-"
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _changes(console: Console, report: MatrixReport) -> None:
    if not report.compared_with:
        return
    if not report.changes:
        console.print(f"no cell changed since {escape(report.compared_with)}", highlight=False)
        return
    console.print(f"Changed since {escape(report.compared_with)}:", highlight=False)
    for c in report.changes:
        mark = "REGRESSION " if c.regression else ""
        console.print(f"  {mark}{escape(c.model)} × {c.op} (torch {c.torch}): {c.before or 'absent'} -> "
                      f"{c.after or 'absent'}", highlight=False)


def verdict(report: MatrixReport) -> Verdict:
    passed = sum(c.passed for c in report.cells)
    counts = {}
    for c in report.cells:
        counts[c.outcome] = counts.get(c.outcome, 0) + 1
    tally = ", ".join(f"{str(o)} {n}" for o, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    text = f"matrix: {passed} of {len(report.cells)} cell(s) pass every gate ({tally or 'no cells'})"
    if report.regressions:
        return Verdict("FAIL", f"{text}; {len(report.regressions)} regression(s) since {report.compared_with}")
    if report.compared_with:
        return Verdict("PASS", f"{text}; no regression since {report.compared_with}")
    return Verdict("INFO", text)


def grid_markdown(report: MatrixReport, written_to: Path) -> str:
    """The table as Markdown, each cell linking to its run's report.md (relative to the file at `written_to`)."""
    cols = columns(report)
    several = len({t for _op, t in cols}) > 1
    lines = ["| model | " + " | ".join(column_heading(op, t, several) for op, t in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for model, cells in grid(report):
        lines.append(f"| {_md(model)} | " + " | ".join(_md_cell(c, report, written_to) for c in cells) + " |")
    return "\n".join(lines)


def footnote(report: MatrixReport) -> str:
    what = ("Figures: the op's fused calls in the compiled graph / its fused launches per step. "
            if report.until == "run" else "Each cell: `sdcompile scaffold --dry-run` (--path auto). ")
    return f"{what}{report.target}; {versions_line(report.versions, target=False)}; sdcompile {report.sdcompile}."


def _md_cell(cell: Cell | None, report: MatrixReport, written_to: Path) -> str:
    if cell is None:
        return "-"
    text = _md(cell_text(cell))
    if not cell.report:
        return text
    href = os.path.relpath(Path(report.folder) / cell.report, Path(written_to).resolve().parent)
    return f"[{text}]({href.replace(' ', '%20')})"


def _md(text: str) -> str:
    return text.replace("|", "\\|")
