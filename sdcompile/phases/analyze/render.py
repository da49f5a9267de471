"""Rendering of `sdcompile analyze`: one table per primitive, then where each implementation's tensors come
from, with graph evidence."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from sdcompile.phases.analyze.phase import AnalyzeResult, ImplementationReport, OpReport
from sdcompile.rendering.versions import versions_line

_PATH_STYLE = {"register_replacement": "green", "custom graph pass": "yellow"}


def _sites(impl: ImplementationReport, limit: int = 3) -> str:
    shown = [s.path or "(model)" for s in impl.sites[:limit]]
    more = f"\n+{impl.site_count - limit} more" if impl.site_count > limit else ""
    return f"{impl.site_count}: " + "\n".join(shown) + more


def _params(impl: ImplementationReport) -> str:
    d = impl.decision
    if impl.tensors:
        first = impl.tensors[0]
        extra = f" (+{len(impl.tensors) - 1})" if len(impl.tensors) > 1 else ""
        return f"{d.parameter_source}\n{first.tensor.rsplit('.', 1)[-1]}{extra}: {first.before_freezing} -> " \
               f"{first.after_freezing.split(' (')[0]}"
    text = d.parameter_source
    if impl.child_tensors:
        text += f"\n(module attributes only in children: {len(impl.child_tensors)})"
    return text


def _source(impl: ImplementationReport) -> str:
    if impl.primitive_lines:
        return f"{impl.source}\n(the {impl.kind} code: lines {impl.primitive_lines})"
    return f"{impl.source}\n(ran: {impl.lines_run})" if impl.lines_run else impl.source


def _npu(impl: ImplementationReport) -> str:
    note = impl.npu_note
    if note is None:
        return ""
    return f"{', '.join(note.fused_ops)}\ntaken at {note.taken_at}/{note.of_sites} sites"


def _op_table(report: OpReport) -> Table:
    title = f"{report.title} — {len(report.implementations)} implementation(s), {report.site_count} site(s)"
    table = Table(title=title, title_justify="left", show_lines=True)
    for col in ("implementation", "kind / scope", "sites", "source (lines run)", "parameter source", "path",
                "NPU note"):
        table.add_column(col, overflow="fold")
    for impl in report.implementations:
        form = f"\n{impl.form}" if impl.form else ""
        order = f"\norder: {impl.order}" if impl.order else ""
        style = _PATH_STYLE.get(impl.decision.path, "")
        table.add_row(
            f"[bold]{impl.name}[/]{form}{order}",
            f"{impl.kind}\n{impl.scope}",
            _sites(impl),
            _source(impl),
            _params(impl),
            f"[{style}]{impl.decision.path}[/]\n{impl.decision.stage}" if style else impl.decision.path,
            _npu(impl),
        )
    return table


def render_analyze(console: Console, result: AnalyzeResult) -> None:
    console.print(
        f"[bold]{result.label}[/] — {result.model_class}\n"
        f"dtype {result.dtype} · device {result.device} · {result.capture.graphs} graph(s) captured in "
        f"{result.seconds:.1f}s\n{versions_line(result.versions, target=False)}",
        highlight=False,
    )
    for report in result.ops:
        if not report.present:
            marker = "[red]absent[/]" if report.requested else "absent"
            console.print(f"\n[bold]{report.title}[/]: {marker} — {report.note}", highlight=False)
            continue
        console.print()
        console.print(_op_table(report))
        for impl in report.implementations:
            console.print(f"[bold]{impl.name}[/]: {impl.decision.why}", highlight=False)
            for line in impl.evidence[:3]:
                console.print(f"  evidence: {line}", highlight=False, soft_wrap=True)
            if impl.npu_note is not None:
                console.print(f"  NPU: {impl.npu_note.text}", highlight=False)
            if impl.snippet:
                console.print(f"  source: {impl.snippet}   subgraphs: {impl.subgraphs}", highlight=False)
    console.print(f"\nGraphs: {result.capture.note}", highlight=False)
    if result.capture.redundant_node_elimination:
        console.print("Before the pattern pass: redundant-node elimination by "
                      f"{result.capture.redundant_node_elimination}", highlight=False)
    dumps = f" (graph dumps in {result.capture.folder})" if result.capture.folder else ""
    console.print(f"Workspace: {result.workspace}{dumps}", highlight=False)
    if result.gate == "fail":
        console.print(f"[red]gate failed[/]: requested but absent: {', '.join(result.missing)}", highlight=False)
