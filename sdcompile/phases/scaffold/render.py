"""Rendering of `sdcompile scaffold`: the reuse check site by site, the path, what was generated and its check."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from sdcompile.phases.scaffold.phase import ScaffoldResult
from sdcompile.rendering.versions import versions_line

DECISION_STYLE = {
    "reuse": "cyan",
    "already fused": "cyan",
    "generate": "green",
    "nothing located": "red",
    "cannot generate": "red",
}
STATUS_STYLE = {
    "replaced": "green",
    "partly replaced": "yellow",
    "not replaced": "dim",
    "fused by the model": "cyan",
    "not in the graph": "red",
}


def _coverage(status: str, by: tuple[str, ...], left: tuple[str, ...]) -> str:
    text = f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"
    if by:
        text += "\n" + "\n".join(escape(b) for b in by)
    if left and status != "not replaced":
        text += f"\n[dim]left: {escape(', '.join(left))}[/]"
    return text


def _check(row) -> str:
    if row.check is None:
        return ""
    c = row.check
    if c.hit:
        return "[green]hit[/]"
    text = "[red]miss[/]"
    if c.by:
        text += f" (by {escape(', '.join(c.by))})"
    if c.error:
        text += f"\n{escape(c.error)}"
    return text


def render_scaffold(console: Console, r: ScaffoldResult) -> None:
    style = DECISION_STYLE.get(r.decision, "white")
    mode = " [yellow](dry run: nothing written)[/]" if r.dry_run else ""
    console.print(f"[bold]scaffold[/] {escape(r.model)} {escape(r.op)}: [{style}]{r.decision}[/]{mode} — "
                  f"{escape(r.decision_reason)}")
    console.print(f"  model     {escape(r.label)} · {'/'.join(r.dtypes)} · device {escape(r.device)}")
    console.print(f"  versions  {escape(versions_line(r))}")
    console.print(f"  target    MindIE-SD {escape(r.target_version)} at {escape(r.target)} "
                  f"({escape(r.target_package)})")
    console.print(f"  names     {escape(r.names.group)} in patterns/{escape(r.names.pattern_filename)}, flag "
                  f"{escape(r.names.flag)}")
    console.print(f"  phase 1   {escape(r.phase1)}")

    if r.paths:
        paths = Table(title="path per implementation", title_justify="left")
        for col in ("implementation", "parameter source", "phase 1", "path", "why"):
            paths.add_column(col, overflow="fold")
        for p in r.paths:
            paths.add_row(escape(p.implementation), escape(p.parameter_source), escape(p.phase1_path),
                          f"[bold]{p.path}[/]", escape(p.why))
        console.print(paths)

    sites = Table(title=f"reuse check: the target's groups on {r.model}'s graph, site by site "
                        f"(production = the {len(r.production_groups)} groups enabled by default, in registry order)",
                  title_justify="left")
    for col in ("dtype", "site", "implementation", "nodes", "production", "groups alone", "needs", "generated",
                "check"):
        sites.add_column(col, overflow="fold")
    for row in r.sites:
        alone = "\n".join(f"{escape(g.group)}: {g.status} ({g.replaced}/{row.nodes})" for g in row.groups)
        need = f"[bold]{escape(row.need)}[/]\n[dim]{escape(row.reason)}[/]"
        sites.add_row(row.dtype, escape(row.site or "(model)"), escape(row.implementation), str(row.nodes),
                      _coverage(row.production.status, row.production.by, row.production.left),
                      alone or "[dim]none[/]", need,
                      escape(row.generated or ""), _check(row))
    console.print(sites)

    for v in r.variants:
        kind = "register_replacement pattern" if v.path == "replacement" else "graph-pass chain"
        console.print(f"[bold]{escape(v.name)}[/] ({kind}) from {escape(v.implementation)} — {len(v.sites)} site(s); "
                      f"entries: {escape(', '.join(v.entries))}")
        for line in v.inputs + v.constants:
            console.print(f"  {escape(line)}")
        if v.trimmed:
            console.print(f"  [yellow]left outside the pattern:[/] {escape('; '.join(v.trimmed))}")
        console.print(Syntax("\n".join(v.chain) + f"\n# replacement: {v.replacement}", "python", theme="ansi_dark",
                             background_color="default"))

    if r.files:
        files = Table(title="files", title_justify="left")
        for col in ("file", "kind", "status", "lines"):
            files.add_column(col)
        for f in r.files:
            files.add_row(escape(f.path), f.kind, f.status, str(f.lines))
        console.print(files)
        if r.dry_run:
            diffs = "".join(f.diff for f in r.files)
            if diffs:
                console.print(Syntax(diffs, "diff", theme="ansi_dark", background_color="default"))
    if r.backend_diff:
        console.print("[bold]backend edit[/] (not applied: apply it yourself, e.g. `git apply` of the saved "
                      "scaffold/backend.diff):")
        console.print(Syntax(r.backend_diff, "diff", theme="ansi_dark", background_color="default"))

    for e in r.errors:
        console.print(f"[yellow]warning:[/] {escape(e)}")
    for n in r.notes:
        console.print(f"[cyan]note:[/] {escape(n)}")
    if r.next_steps:
        console.print("[bold]next:[/]")
        for step in r.next_steps:
            console.print(f"  {escape(step)}")
    if r.workspace:
        console.print(f"[dim]recorded phase 2 in {escape(r.workspace)}[/]")
