"""Rendering of `sdcompile status`."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.core.target.registry import GRAPH_ENTRIES
from sdcompile.phases.status.results import StatusReport
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line
from sdcompile.workspace.phases import PHASE_NUMBER

VERDICT_STYLE = {"pass": "[green]pass[/]", "fail": "[red]fail[/]", "info": "[cyan]info[/]", "skipped": "[dim]skip[/]"}


def render_status(console: Console, report: StatusReport) -> None:
    pairs = FitTable(title=f"Lifecycle — workspace {report.workspace}", head=2)
    pairs.add_column("model")
    pairs.add_column("op")
    for phase in report.phases:
        pairs.add_column(f"{PHASE_NUMBER[phase]} {phase}", justify="center")
    pairs.add_column("next")
    for pair in report.pairs:
        cells = []
        for phase in report.phases:
            rec = pair.phases.get(phase)
            cells.append(VERDICT_STYLE.get(rec.verdict, rec.verdict) if rec else "[dim]·[/]")
        pairs.add_row(pair.model, pair.op, *cells, pair.next_phase() or "[green]done[/]")
    if report.pairs:
        console.print(pairs)
    else:
        console.print(
            f"No model/op pairs in {report.workspace} yet — start with `sdcompile analyze --model M --op OP`."
        )

    console.print(versions_line(report.versions, target=report.target is not None), highlight=False)
    if report.recovered:
        console.print(f"[yellow]recovered:[/] {escape(report.recovered)}", highlight=False)
    if report.target is None:
        console.print(f"[yellow]No target:[/] {report.target_error}")
        close(console, verdict(report))
        return
    t = report.target
    groups = FitTable(title=f"Target — MindIE-SD {t.version} at {t.root} (found by {t.found_by})", head=2)
    for col in ("#", "group", "flag", "default", "exported", "pattern file"):
        groups.add_column(col)
    for g in t.groups:
        default = {True: "True", False: "False", None: "[red]missing[/]" if not g.flag_declared else "?"}[
            g.flag_default
        ]
        carrier = g.carrier == GRAPH_ENTRIES  # a GraphPatternEntry carrier: called, never exported
        groups.add_row(
            "entries" if carrier else str(g.position),
            g.group,
            g.flag,
            default,
            "n/a (its call)" if carrier else "yes" if g.exported else "[red]no[/]",
            g.pattern_file or "[red]not found[/]",
        )
    console.print(groups)
    carriers = sum(g.carrier == GRAPH_ENTRIES for g in t.groups)
    ahead = (f", after the {carriers} GraphPatternEntry carrier(s) passes/__init__.py registers first" if carriers
             else "")
    console.print(
        f"{len(t.groups) - carriers} pattern groups, registered in this order{ahead} (order matters: earlier groups "
        "match first)."
    )
    close(console, verdict(report))


def verdict(report: StatusReport) -> Verdict:
    """The closing line: each pair's next phase (or done), and the target's group count."""
    pairs = "; ".join(f"{p.model} {p.op}: {'next ' + p.next_phase() if p.next_phase() else 'done'}"
                      for p in report.pairs) or f"no model/op pairs in {report.workspace}"
    target = "no target"
    if report.target is not None:
        carriers = sum(g.carrier == GRAPH_ENTRIES for g in report.target.groups)
        target = (f"{len(report.target.groups) - carriers} pattern groups"
                  + (f" and {carriers} GraphPatternEntry carrier(s)" if carriers else "")
                  + f" in MindIE-SD {report.target.version}")
    return Verdict("INFO", f"{pairs}; {target}")
