"""Rendering of `sdcompile backends`."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.backends.results import BackendsReport
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line

_AVAILABLE = {"yes": "[green]yes[/]", "emulated": "[cyan]emulated[/]", "no": "[red]no[/]"}


def render_backends(console: Console, report: BackendsReport) -> None:
    table = FitTable(title=f"Backends — this machine: {report.device}", title_justify="left")
    for col in ("backend", "from", "available", "MindIE patterns", "AOT functionalization", "capture", "why"):
        table.add_column(col, overflow="fold")
    for b in report.backends:
        table.add_row(b.name, _provider(b), _AVAILABLE.get(b.available, b.available), b.mindie_patterns,
                      b.aot_functionalization, b.capture, b.reason)
    console.print(table)
    for b in report.backends:
        console.print(f"[bold]{b.name}[/] ({escape(b.title)})\n  entry point: {escape(b.entry_point)}\n"
                      f"  copies: {escape(b.copy_behaviour)}", highlight=False)
        if b.provider == "outside":
            console.print("  a torch.compile backend outside MindIE-SD: MindIE-SD's fusions are lost under it, so "
                          "copy-audit never offers it as a remedy", highlight=False)
        if not b.offered:
            console.print(f"  not offered by the target: its CompilationConfig has no {', '.join(b.missing)}",
                          highlight=False)
        for m in b.modes:
            console.print(f"  {escape(m.field)}: {escape(m.meaning)}", highlight=False)
            console.print(f"    {escape(m.line)}", highlight=False, soft_wrap=True)  # code: pastes whole
    source = (f"CompilationConfig fields read from {report.config_source}" if report.config_from_tree else
              f"CompilationConfig fields from {report.config_source}: "
              f"{report.config_problem or 'no MindIE-SD tree found (pass --repo or set $SDCOMPILE_REPO)'}")
    console.print(escape(source), highlight=False)
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
    close(console, verdict(report))


def verdict(report: BackendsReport) -> Verdict:
    usable = [f"{b.name}{' (emulated)' if b.available == 'emulated' else ''}" for b in report.backends
              if b.available != "no"]
    mindiesd = [b.name for b in report.backends if b.provider == "mindiesd" and b.offered]
    who = "the target" if report.config_from_tree else "MindIE-SD (documented fields)"
    return Verdict("INFO", f"{who} offers {', '.join(mindiesd) or 'none'}; this machine ({report.device}) runs "
                           f"{len(usable)} of {len(report.backends)} backends: {', '.join(usable) or 'none'}")


def _provider(b) -> str:
    if b.provider == "outside":
        return "torchair (outside MindIE-SD)"
    return "MindIE-SD" if b.offered else "MindIE-SD (not in this tree)"
