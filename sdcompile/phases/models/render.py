from __future__ import annotations

from rich.console import Console
from rich.table import Table

from sdcompile.phases.models.results import ModelsReport


def render_models(console: Console, report: ModelsReport) -> None:
    checked = any(r.checked for r in report.rows)
    table = Table(title=f"Models — diffusers {report.diffusers_version}", title_justify="left")
    table.add_column("--model", no_wrap=True)
    table.add_column("source", no_wrap=True)
    table.add_column("builds" if checked else "note", overflow="fold")
    for row in report.rows:
        if not checked:
            detail = row.note
        elif row.builds:
            detail = f"yes ({row.size})"
        else:
            detail = f"no: {row.problem}"
        table.add_row(row.name if row.source == "zoo" else row.class_name, row.source, detail)
    console.print(table)
    console.print(verdict_line(report), highlight=False)


def verdict_line(report: ModelsReport) -> str:
    checked = [r for r in report.rows if r.checked]
    if not checked:
        zoo = sum(1 for r in report.rows if r.source == "zoo")
        return f"PASS {len(report.rows)} models: {zoo} zoo, {len(report.rows) - zoo} diffusers (--check builds each)"
    built = sum(1 for r in checked if r.builds)
    return f"{'PASS' if built == len(checked) else 'FAIL'} {built} of {len(checked)} models build and run a forward"
