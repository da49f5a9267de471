from __future__ import annotations

from rich.console import Console

from sdcompile.core.zoo.memory import shown_count
from sdcompile.phases.models.results import ModelsReport, SizeCheck
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.tables import FitTable


def render_models(console: Console, report: ModelsReport) -> None:
    table = FitTable(title=f"Models — diffusers {report.diffusers_version}", title_justify="left")
    table.add_column("--model", no_wrap=True)
    table.add_column("source", no_wrap=True)
    if not report.sizes:
        table.add_column("note", overflow="fold")
    for size in report.sizes:
        table.add_column(size if size == "tiny" else f"real (--num-layers {report.num_layers})", overflow="fold")
    for row in report.rows:
        cells = [row.note] if not report.sizes else [size_cell(c) for c in row.checked]
        table.add_row(row.name if row.source == "zoo" else row.class_name, row.source, *cells)
    console.print(table)
    close(console, verdict(report))


def size_cell(check: SizeCheck) -> str:
    """`yes: tiny config, 5.0 M` / `yes: real config, 1 layer, 535.3 M of 11.9 B` / `no: <why>`."""

    if not check.builds:
        return f"no: {check.problem}"
    whole = f" of {shown_count(check.full_parameters)}" if check.full_parameters else ""
    return f"yes: {check.config}, {shown_count(check.parameters or 0)}{whole}"


def verdict(report: ModelsReport) -> Verdict:
    checked = [r for r in report.rows if r.checked]
    if not checked:
        zoo = sum(1 for r in report.rows if r.source == "zoo")
        return Verdict("PASS", f"{len(report.rows)} models: {zoo} zoo, {len(report.rows) - zoo} diffusers "
                               "(--check builds each)")
    built = sum(1 for r in checked if r.builds)
    sizes = " and ".join(report.sizes)
    return Verdict("PASS" if built == len(checked) else "FAIL",
                   f"{built} of {len(checked)} models build and run a forward at {sizes} size")
