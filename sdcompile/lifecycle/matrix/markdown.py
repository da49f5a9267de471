"""The table as Markdown (`--markdown FILE`): a whole file, or written into marked sections of a page
(`--section NAME`, between `<!-- NAME -->` and `<!-- end of NAME -->`: a README's coverage table, the guides'
per-model tables). `--until scaffold` tables are one per op and torch in the guides' layout (outcomes.py); a
section name's `{op}` and `{torch-range}` then name each one's section."""

from __future__ import annotations

from pathlib import Path

from sdcompile.lifecycle.matrix.outcomes import HEADER, replace_section
from sdcompile.lifecycle.matrix.render import footnote, grid_markdown
from sdcompile.lifecycle.matrix.results import Cell, MatrixReport
from sdcompile.util.errors import BadInput
from sdcompile.util.fsutil import atomic_write_text

OP, TORCH_RANGE = "{op}", "{torch-range}"


def outcome_tables(report: MatrixReport) -> dict[tuple[str, str], str]:
    """(op, torch) -> the guides' table of what scaffold did on each model, in the table's model order."""
    by_key = {c.key: c for c in report.cells}
    torches = list(dict.fromkeys(c.torch for c in report.cells))
    tables = {}
    for op in report.ops:
        for torch in torches:
            rows = [_outcome_row(by_key[(m, op, torch)]) for m in report.models if (m, op, torch) in by_key]
            if rows:
                tables[(op, torch)] = "\n".join([*HEADER, *rows])
    return tables


def _outcome_row(cell: Cell) -> str:
    if cell.scaffold is not None:
        return cell.scaffold.markdown()
    return f"| {cell.model} | – | – | {cell.outcome}: {cell.why.splitlines()[0] if cell.why else ''} | – |"


def document(report: MatrixReport, written_to: Path) -> str:
    if report.until == "run":
        return f"{grid_markdown(report, written_to)}\n\n{footnote(report)}\n"
    parts = [f"### {op} (torch {torch})\n\n{table}" for (op, torch), table in outcome_tables(report).items()]
    return "\n\n".join([*parts, footnote(report)]) + "\n"


def write_markdown(report: MatrixReport, path: Path, section: str | None) -> None:
    """`path` as the table's file, or with the table written into its `section`(s)."""
    if section is None:
        atomic_write_text(path, document(report, path))
        return
    try:
        page = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"--markdown {path} cannot be read ({exc.strerror or exc}): --section writes into a page",
                       "name an existing page with the section's marker lines") from exc
    if report.until == "run":
        page = replace_section(page, section, grid_markdown(report, path), path)
    else:
        tables = outcome_tables(report)
        for placeholder, values in ((OP, {op for op, _t in tables}), (TORCH_RANGE, {t for _op, t in tables})):
            if len(values) > 1 and placeholder not in section:
                raise BadInput(f"--section {section!r} names one section for {len(values)} tables",
                               f"put {placeholder} in it: each table goes to its own section")
        states = dict(report.torch_states)
        for (op, torch), table in outcome_tables(report).items():
            name = section.replace(OP, op).replace(TORCH_RANGE, states.get(torch, f"torch {torch}"))
            page = replace_section(page, name, table, path)
    atomic_write_text(path, page)
