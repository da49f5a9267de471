"""The matrix as a self-contained HTML page (templates/profiles_report.html.j2): the table, the cells that did not
pass with their reasons, and what changed since --compare's table."""

from __future__ import annotations

from pathlib import Path

from sdcompile._version import __version__
from sdcompile.html.profiles import badge, heading, render_html, section, table, write_page
from sdcompile.lifecycle.matrix.render import cell_text, column_heading, columns, grid, verdict
from sdcompile.lifecycle.matrix.results import MatrixReport
from sdcompile.rendering.versions import versions_line


def matrix_context(report: MatrixReport) -> dict:
    cols = columns(report)
    several = len({t for _op, t in cols}) > 1
    rows = [[model, *(cell_text(c) if c else "-" for c in cells)] for model, cells in grid(report)]
    sections = [section("Fusion coverage: the op's fused calls in the compiled graph / its fused launches per step",
                        table=table(["model", *(column_heading(op, t, several) for op, t in cols)], rows, names={0}))]
    failing = [c for c in report.cells if not c.passed]
    if failing:
        sections.append(section("Cells that did not pass", table=table(
            ["model", "op", "torch", "outcome", "phase", "why", "report"],
            [[c.model, c.op, c.torch, str(c.outcome), c.phase or "-", c.why or "-",
              str(Path(report.folder) / c.report) if c.report else "-"] for c in failing], names={0})))
    if report.compared_with:
        sections.append(section(f"Changed since {report.compared_with}", table=table(
            ["model", "op", "torch", "before", "after", "regression"],
            [[c.model, c.op, c.torch, c.before or "absent", c.after or "absent", "yes" if c.regression else "-"]
             for c in report.changes], names={0})))
    word = verdict(report).word
    badges = [badge(f"{sum(c.passed for c in report.cells)} of {len(report.cells)} cells pass",
                    "pass" if word != "FAIL" else "fail")]
    return {**heading("matrix", report.shard and f"shard {report.shard}" or "the whole table", "per cell", ()),
            "subtitle": f"{report.target} — cells in {report.folder}",
            "versions": versions_line(report.versions, target=False), "badges": badges, "cards": [],
            "sections": sections, "command": "matrix", "version": __version__}


def write_matrix_html(report: MatrixReport, path: Path, force: bool = False) -> None:
    write_page(render_html(matrix_context(report)), path, force)
