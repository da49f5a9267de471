"""Rendering of `sdcompile integrate`."""

from __future__ import annotations

from rich.console import Console

from sdcompile.phases.integrate.results import IntegrateReport
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.profiles import render_notes, render_sides, signed, styled, us
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line

TOP = 25


def render_integrate(console: Console, report: IntegrateReport, top: int = TOP) -> None:
    if report.eager and report.compiled:
        render_sides(console, report.eager, report.compiled)
    if report.diff is not None:
        d = report.diff
        table = FitTable(title=f"Kernel diff by name (top {min(top, len(d.by_name))} of {len(d.by_name)} by "
                               "|time delta|)")
        for col in ("kernel", "op type", "family", "eager n", "eager us", "compile n", "compile us", "delta us",
                    "status"):
            table.add_column(col, overflow="fold", justify="right" if col[-1] in "ns" and col != "status" else "left")
        for r in d.by_name[:top]:
            table.add_row(r.key, r.op_type, r.family, f"{r.eager_count:,}", us(r.eager_us), f"{r.compile_count:,}",
                          us(r.compile_us), signed(r.delta_us), r.status)
        console.print(table)
        fam = FitTable(title="By family", title_justify="left")
        for col in ("family", "eager n", "eager us", "compile n", "compile us", "delta us"):
            fam.add_column(col, justify="left" if col == "family" else "right")
        for r in d.by_family:
            fam.add_row(r.key, f"{r.eager_count:,}", us(r.eager_us), f"{r.compile_count:,}", us(r.compile_us),
                        signed(r.delta_us))
        console.print(fam)
        console.print(f"eager only ({len(d.eager_only)}): {', '.join(d.eager_only) or '-'}", highlight=False)
        console.print(f"compile only ({len(d.compile_only)}): {', '.join(d.compile_only) or '-'}", highlight=False)
    if report.op_check is not None:
        oc = report.op_check
        table = FitTable(title=f"{oc.title}: fused kernel and eager chain", title_justify="left")
        for col in ("kernel type", "role", "eager n", "compile n"):
            table.add_column(col)
        for t in oc.fused:
            table.add_row(t.op_type, "fused", f"{t.eager_count:,}", f"{t.compile_count:,}")
        for t in oc.chain:
            role = "eager chain (signature)" if t.op_type in oc.signature else "eager chain (shared)"
            table.add_row(t.op_type, role, f"{t.eager_count:,}", f"{t.compile_count:,}")
        console.print(table)
    layers = FitTable(title=f"integrate{' --op ' + report.op if report.op else ''}: {styled(report.verdict)}")
    for col in ("layer", "verdict", "evidence", "detail"):
        layers.add_column(col, overflow="fold")
    for layer in report.layers:
        layers.add_row(f"{layer.number} {layer.name}", styled(layer.verdict), layer.evidence, layer.detail)
    console.print(layers)
    render_notes(console, report.notes)
    console.print(f"device: {report.device}; catalog: {', '.join(report.catalog)}", highlight=False)
    console.print(versions_line(report.versions, target=report.model_compile is not None), highlight=False)
    close(console, verdict(report))


def verdict(report: IntegrateReport) -> Verdict:
    layers = "; ".join(f"layer {x.number} {x.name}: {x.verdict}" for x in report.layers)
    return Verdict({"pass": "PASS", "fail": "FAIL"}.get(report.verdict, "INFO"),
                   f"integrate{' --op ' + report.op if report.op else ''}: {layers}")
