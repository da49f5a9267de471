"""Rendering of `sdcompile debug`: graph breaks first, the groups, every site's verdict, then each mismatch with
the first differing node pair side by side, its type and the fix."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.debug.results import DebugResult, GroupAtSite, NodeView, PatternAtSite, SiteResult
from sdcompile.rendering import npu_kernels
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.graph_breaks import breaks_headline, graph_break_lines
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line

_VERDICT_STYLE = {"matches": "green", "already fused": "cyan", "mismatch": "red"}


def _styled(verdict: str) -> str:
    return f"[{_VERDICT_STYLE.get(verdict, 'white')}]{verdict}[/]"


def render_debug(console: Console, result: DebugResult, show_patterns: bool = False) -> None:
    _header(console, result)
    _groups(console, result)
    if show_patterns:
        _patterns(console, result)
    _sites(console, result)
    _npu_kernels(console, result)
    _mismatches(console, result)
    console.print(f"graphs, patterns and debug.json: {escape(result.report_dir)}", highlight=False)
    close(console, verdict(result))


def verdict(result: DebugResult) -> Verdict:
    return Verdict("PASS" if result.passed else "FAIL", result.summary)


def _npu_kernels(console: Console, r: DebugResult) -> None:
    """The fused calls each group's pass made in the model, where they do not pass on the NPU's kernel."""
    for g in r.groups:
        said = npu_kernels.lines(g.kernels, g.group, g.flag)
        if said:
            console.print(f"[bold]On the NPU's kernels[/] — what {escape(g.group)} put in the model:", highlight=False)
            for line in said:
                console.print(f"  {line}", highlight=False, markup=False)


def _header(console: Console, r: DebugResult) -> None:
    name = r.label if r.label.startswith(r.model) else f"{r.model} ({r.label})"
    console.print(f"[bold]debug[/] — {escape(name)} · op {r.op} · dtype {r.dtype}", highlight=False)
    console.print(f"device {r.device} ({escape(r.device_reason)}) · {escape(versions_line(r))} · tree "
                  f"{escape(r.target)}", highlight=False)
    if r.graph_breaks is not None:
        b = r.graph_breaks
        color = "green" if b.breaks == 0 and not b.untraced else "yellow"
        headline = breaks_headline(b.graphs, bool(b.untraced))
        console.print(f"[bold]graph breaks[/]: [{color}]{b.breaks}[/] — {escape(headline)}", highlight=False)
        for line in graph_break_lines(b.places, b.untraced):
            console.print(f"  {escape(line)}", highlight=False)
    console.print(f"[bold]stage[/] {escape(r.stage_note)}", highlight=False)
    for note in r.notes:
        console.print(f"note: {escape(note)}", highlight=False)


def _groups(console: Console, r: DebugResult) -> None:
    table = FitTable(title="Pattern groups (patterns as register_replacement registered them)", title_justify="left")
    for col in ("group", "patterns", "traced with", "unit hits", "model hits"):
        table.add_column(col, overflow="fold")
    for g in r.groups:
        names = "\n".join(
            f"{p.name}" + ("" if p.same_as_registered in (True, None) or p.error else " (re-trace differs!)")
            + (f" [red]{escape(p.error)}[/]" if p.error else "") for p in g.patterns)
        traced = next((p.traced_with for p in g.patterns if p.traced_with), "")
        model = "n/a" if g.model_hits is None else str(g.model_hits)
        if g.model_hits_before_freezing is not None:
            model += f" (before_freezing, where the backend's pass runs: {g.model_hits_before_freezing})"
        if g.silent_miss:
            model = f"[red]{model} (unit hits, model none)[/]"
        notes = [f"[red]{escape(g.error)}[/]"] if g.error else []
        notes += [f"outside every site: {escape(x)}" for x in g.outside_sites[:3]]
        table.add_row(escape(g.group) + ("\n" + "\n".join(notes) if notes else ""), escape(names), escape(traced),
                      str(g.unit_hits), model)
    console.print(table)
    if r.registry_run is not None:
        run = r.registry_run
        hits = ", ".join(f"{g} ×{n}" for g, n in run.replacements.items()) or "none"
        console.print(f"[bold]registry order[/]: {escape(run.note)}; replacements: {escape(hits)}; ordering "
                      f"conflicts: {run.conflicts}", highlight=False)


def _patterns(console: Console, r: DebugResult) -> None:
    for g in r.groups:
        for p in g.patterns:
            if p.error:
                continue
            console.print(f"[bold]{escape(p.name)}[/] ({escape(p.source_file)}), output op "
                          f"{', '.join(p.anchor) or '?'}; as registered:", highlight=False)
            console.print(escape(p.printed), highlight=False)
            console.print("search graph:", highlight=False)
            console.print(escape(p.graph), highlight=False)


def _sites(console: Console, r: DebugResult) -> None:
    if not r.sites:
        console.print(f"[red]no candidate site[/] for {r.op}: no phase-1 implementation and no anchor op "
                      f"([anchors] in catalogs/ops/{r.op}.toml) in the graph", highlight=False)
        return
    table = FitTable(title=f"Candidate sites at {r.stage}", title_justify="left")
    table.add_column("site", overflow="fold")
    table.add_column("found by", overflow="fold")
    table.add_column("verdict")
    for g in r.groups:
        table.add_column(g.group, overflow="fold")
    for s in r.sites:
        cells = []
        by_group = {ga.group: ga for ga in s.groups}
        for g in r.groups:
            ga = by_group.get(g.group)
            cells.append(_group_cell(ga) if ga else "")
        where = f"{s.id} {escape(s.label)}" + (f"\n{escape(s.source)}" if s.source else "")
        table.add_row(where, escape("\n".join(s.found_by)), _styled(s.verdict), *cells)
    console.print(table)


def _group_cell(ga: GroupAtSite) -> str:
    if ga.verdict == "matches":
        return "[green]matches[/] " + escape(", ".join(f"{k} ×{v}" for k, v in ga.replaced_by.items()))
    if ga.verdict == "already fused":
        return "[cyan]already fused[/]"
    if ga.mismatch_type is not None:
        return f"[red]type {ga.mismatch_type}[/]"
    return "[red]mismatch[/]"


_Block = list[tuple[SiteResult, GroupAtSite, PatternAtSite | None]]


def _mismatches(console: Console, r: DebugResult) -> None:
    """One block per group and cause: the first site's pair and fix (node names are that site's), the other sites
    listed. Groups that miss a site another group matches are shown too: why each group does (not) match is the
    point."""
    for (group, pattern, number, _cause), items in _mismatch_blocks(r).items():
        s, ga, p = items[0]
        title = f"type {number} ({p.mismatch.name}, path {p.mismatch.path})" if p and p.mismatch else "mismatch"
        console.print(f"\n[bold red]{title}[/] — {escape(group)} at {_block_sites(items)}"
                      + (f"; closest pattern {escape(pattern)}" if pattern else ""), highlight=False)
        if p is None:
            console.print(f"  {escape(ga.summary)}", highlight=False)
            continue
        _pattern_block(console, s, p, pattern)


def _mismatch_blocks(r: DebugResult) -> dict[tuple, _Block]:
    """Every mismatching (site, group) keyed by group, closest pattern and cause, in site order."""
    blocks: dict[tuple, _Block] = {}
    for s in r.sites:
        for ga in s.groups:
            if ga.verdict != "mismatch":
                continue
            closest = next((p for p in ga.patterns if p.pattern == ga.closest), None)
            cause = (closest.mismatch.type, closest.mismatch.cause) if closest and closest.mismatch else \
                (None, ga.summary)
            blocks.setdefault((ga.group, closest.pattern if closest else None, *cause), []).append((s, ga, closest))
    return blocks


def _block_sites(items: _Block) -> str:
    """The sites of one block, and which of them another group matches."""
    at = ", ".join(i[0].id for i in items)
    covered = [i[0].id for i in items if i[0].verdict != "mismatch"]
    if covered:
        at += f" ({', '.join(covered)} matched by another group)" if len(covered) < len(items) else \
            " (each matched by another group)"
    return at


def _pattern_block(console: Console, s: SiteResult, p: PatternAtSite, pattern: str | None) -> None:
    """The closest pattern at the block's first site: its first difference side by side, the fix, the rest."""
    if p.first is not None:
        console.print(f"  first difference ({p.first.stage} match, field [bold]{p.first.field}[/]) at {s.id}: "
                      f"{escape(p.first.detail)}", highlight=False)
        console.print(_side_by_side(p.first.pattern, p.first.model, pattern or "pattern"))
    console.print(f"  lined up: {p.matched} of {p.total} pattern ops from {p.start}; torch's matcher: "
                  f"{escape(p.torch_says)}", highlight=False)
    if p.mismatch is not None:
        console.print(f"  [bold]fix[/]: {escape(p.mismatch.fix)}", highlight=False)
        for line in _further_evidence(p):
            console.print(f"  evidence: {escape(line)}", highlight=False)
    for other in p.other_differences:
        console.print(f"  then: {escape(other)}", highlight=False)
    for note in p.notes:
        console.print(f"  note: {escape(note)}", highlight=False)
    if p.mismatch is not None:
        console.print(f"  more: sdcompile explain mismatch {p.mismatch.type}", highlight=False)


def _further_evidence(p: PatternAtSite) -> list[str]:
    """The mismatch's evidence beyond what the block already shows (the difference, both nodes, torch's verdict)."""
    shown = {p.first.detail} if p.first else set()
    for side, view in (("pattern", p.first.pattern if p.first else None),
                       ("model", p.first.model if p.first else None)):
        if view is not None:
            shown.add(f"{side}: {view.text}")
    return [line for line in p.mismatch.evidence
            if not line.startswith("torch's matcher:")  # printed above
            and line not in shown and not any(line.startswith(x + "  [") for x in shown)]


def _side_by_side(pattern: NodeView | None, model: NodeView | None, pattern_name: str) -> FitTable:
    table = FitTable(show_header=True, box=None, padding=(0, 2), pack=False, indent=2)
    table.add_column("")
    table.add_column(f"pattern ({pattern_name})", overflow="fold")
    table.add_column("model", overflow="fold")
    rows = (("node", lambda v: v.text), ("op", lambda v: v.op), ("source", lambda v: v.source or "—"),
            ("holds", lambda v: v.holds or "—"))
    for label, get in rows:
        left = escape(get(pattern)) if pattern else "— (none here)"
        right = escape(get(model)) if model else "— (none here)"
        if label == "holds" and left == right == "—":
            continue
        table.add_row(label, left, right)
    return table
