"""Rendering of `sdcompile backends`."""

from __future__ import annotations

from rich.console import Console

from sdcompile.phases.backends.results import BackendsReport
from sdcompile.rendering.closing import print_verdict
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line

_AVAILABLE = {"yes": "[green]yes[/]", "emulated": "[cyan]emulated[/]", "no": "[red]no[/]"}


def render_backends(console: Console, report: BackendsReport) -> None:
    table = FitTable(title=f"Backends — this machine: {report.device}", title_justify="left")
    for col in ("backend", "available", "MindIE patterns", "AOT functionalization", "capture", "why"):
        table.add_column(col, overflow="fold")
    for b in report.backends:
        table.add_row(b.name, _AVAILABLE.get(b.available, b.available), b.mindie_patterns,
                      b.aot_functionalization, b.capture, b.reason)
    console.print(table)
    for b in report.backends:
        console.print(f"[bold]{b.name}[/] ({b.title})\n  entry point: {b.entry_point}\n  copies: {b.copy_behaviour}",
                      highlight=False)
    probes = FitTable(title="Probes (features, not version strings)", title_justify="left")
    for col in ("probe", "ok", "detail"):
        probes.add_column(col)
    for p in report.probes:
        probes.add_row(p.name, "[green]yes[/]" if p.ok else "[red]no[/]", p.detail)
    console.print(probes)
    if report.versions is not None:
        console.print(versions_line(report.versions, target=False), highlight=False)
    console.print(report.note)
    standins = FitTable(title="Stand-ins for the target's NPU-only files (catalogs/mindiesd_standins.toml)",
                     title_justify="left")
    for col in ("stand-in", "for the tree's file", "why", "serves"):
        standins.add_column(col, overflow="fold")
    for s in report.standins:
        standins.add_row(s.module, s.file, s.why, s.serves)
    console.print(standins)
    console.print(report.standins_note)
    usable = [f"{b.name}{' (emulated)' if b.available == 'emulated' else ''}" for b in report.backends
              if b.available != "no"]
    print_verdict(console, "INFO", f"this machine ({report.device}) runs {len(usable)} of {len(report.backends)} "
                  f"backends: {', '.join(usable) or 'none'}")
