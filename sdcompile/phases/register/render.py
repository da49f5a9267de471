"""Rendering of `sdcompile register` (the edit and its diffs) and `sdcompile register --check` (the audit)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from sdcompile.core.target.registry import GRAPH_ENTRIES, GRAPH_PASS
from sdcompile.core.target.registry_audit import RegistrationAudit
from sdcompile.phases.register.decided import skipped_summary
from sdcompile.phases.register.results import RegisterResult
from sdcompile.rendering.closing import Verdict, close, print_commands
from sdcompile.rendering.layout import print_code
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line
from sdcompile.util.command_line import CommandLine

OUTCOME_STYLE = {
    "registered": "green",
    "completed": "green",
    "already registered": "cyan",
    "removed": "green",
    "not registered": "cyan",
    "called by the backend": "green",
    "not called by the backend": "red",
    "nothing to register": "cyan",
}


def _mark(present: bool) -> str:
    return "[green]present[/]" if present else "[dim]absent[/]"


def render_register(console: Console, r: RegisterResult) -> None:
    if r.skipped:
        _render_skipped(console, r)
        return
    n = r.names
    style = OUTCOME_STYLE.get(r.outcome, "white")
    mode = " [yellow](dry run: nothing written)[/]" if r.dry_run else ""
    verb = "undo" if r.action == "undo" else "register"
    console.print(f"[bold]{verb}[/] {escape(_subject(r))}: [{style}]{r.outcome}[/]{mode}")
    console.print(f"  target    MindIE-SD {escape(r.target_version)} at {escape(r.target_root)}")
    if r.versions is not None:
        console.print(f"  versions  {escape(versions_line(r.versions))}", highlight=False)
    if r.carrier != GRAPH_PASS:  # a custom pass has no flag: the backend's call switches it on
        console.print(f"  flag      {escape(n.flag)}")
    console.print(f"  module    {escape(r.pattern_file)} ({escape(r.pattern_file_status)})")
    if r.position is not None and r.carrier == GRAPH_ENTRIES:
        console.print(f"  position  GraphPatternEntry call #{r.position} in passes/__init__.py, ahead of the "
                      f"{r.registry_size} pattern_registry groups (earlier registrations match first)")
    elif r.position is not None:
        console.print(
            f"  position  #{r.position} of {r.registry_size} in pattern_registry (earlier groups match first)"
        )

    pieces = FitTable(title_justify="left")
    for col in ("file", "piece", "before", "after"):
        pieces.add_column(col)
    for p in r.pieces:
        pieces.add_row(escape(p.file), p.piece, _mark(p.before), _mark(p.after))
    console.print(pieces)

    diffs = "".join(f.diff for f in r.files)
    if diffs:
        print_code(console, diffs, "diff")
    else:
        console.print("[dim]no change: empty diff[/]")

    for v in r.ordering:
        console.print(
            f"[yellow]warning:[/] ordering rule {v.rule}: `{escape(v.must_come_first)}` (#{v.position}) should be "
            f"registered before `{escape(v.registered_after)}` (#{v.after_position}) — {escape(v.reason)} "
            f"[dim](rule from {escape(v.source)})[/]"
        )
    if r.ordering and r.action == "register":
        first = r.ordering[0]
        fix_key = first.registered_after if first.must_come_first == n.flag else first.must_come_first
        op = "--before" if first.must_come_first == n.flag else "--after"
        console.print(f"  to fix: `--undo`, then register again with `{op} {escape(fix_key)}`")
    for note in notes(r):
        console.print(f"[yellow]note:[/] {escape(note)}")
    if r.workspace:
        console.print(f"[dim]recorded phase 3 in {escape(r.workspace)}[/]")
    if r.backend_calls is False:  # a custom graph pass the backend does not call: it never runs
        edit = backend_edit_command(r)
        print_commands(console, [edit] if edit else [])
        if not edit:
            console.print("[yellow]note:[/] this workspace keeps no backend.diff for the pair: scaffold with --path "
                          f"graph-pass shows the backend edit that calls {escape(r.names.pass_class)}")
    close(console, verdict(r))


def _render_skipped(console: Console, r: RegisterResult) -> None:
    mode = " [yellow](dry run: nothing written)[/]" if r.dry_run else ""
    console.print(f"[bold]register[/] {escape(r.model)} / {escape(r.op)}: [cyan]{r.outcome}[/]{mode}")
    console.print(f"  target    MindIE-SD {escape(r.target_version)} at {escape(r.target_root)}")
    if r.workspace:
        console.print(f"[dim]recorded phase 3 (skipped) in {escape(r.workspace)}[/]")
    close(console, verdict(r))


def backend_edit_command(r: RegisterResult) -> str | None:
    """The command that makes the backend edit scaffold saved for a custom graph pass (None: none saved)."""
    if not r.backend_diff:
        return None
    # -i absolute: patch reads it after changing into -d
    return str(CommandLine("patch", ("-d", Path(r.target_root), "-p1", "-i", r.backend_diff),
                           comment="the backend edit scaffold showed (or git apply in the target's root)"))


def verdict(r: RegisterResult) -> Verdict:
    if r.skipped:
        return Verdict("INFO", skipped_summary(r))
    word = "FAIL" if r.backend_calls is False else (
        "INFO" if r.outcome in ("already registered", "not registered") or r.dry_run else "PASS")
    warned = f"; {len(r.ordering)} ordering warning(s)" if r.ordering else ""
    return Verdict(word, f"{'undo' if r.action == 'undo' else 'register'} {_subject(r)}: {r.outcome}"
                   + (" (dry run: nothing written)" if r.dry_run else "") + warned)


def _subject(r: RegisterResult) -> str:
    """What was registered: the group, a GraphPatternEntry carrier's registration function, or the custom pass."""
    if r.carrier == GRAPH_PASS:
        return r.names.pass_class
    return r.names.entries_function if r.carrier == GRAPH_ENTRIES else r.names.group


def notes(r: RegisterResult) -> list[str]:
    """The result's notes, with those its typed fields stand for put in words."""
    said = []
    if r.ignored_position:
        said.append(f"--before/--after {r.ignored_position} applies to pattern_registry groups; a GraphPatternEntry "
                    "carrier's call always runs ahead of every group, so it was not used")
    if r.placement is not None:
        p = r.placement
        said.append(f"placed at #{p.position}, before {p.before_flag}: scaffold's reuse check measured "
                    f"{', '.join(p.shadowing)} taking part of this group's sites when registered first ({p.record}); "
                    "specific groups go before the generic ones that also match their sites")
    return [*said, *r.notes]


def render_audit(console: Console, a: RegistrationAudit) -> None:
    problems = f"{a.errors} inconsistenc{'y' if a.errors == 1 else 'ies'}"
    verdict = "[green]consistent[/]" if a.passed else f"[red]{problems}[/]"
    console.print(
        f"[bold]register --check[/] MindIE-SD {escape(a.target_version)} at {escape(a.target_root)}: {verdict}"
    )
    console.print(
        f"  {a.entries} pattern_registry entries, {a.flags} FusionPatterns flags, {a.exports} patterns exports; "
        f"importable = {escape(a.import_check)}"
    )
    if a.device != "n/a":
        console.print(f"  device: {escape(a.device)}")
    if a.recovered:
        console.print(f"  [yellow]recovered:[/] {escape(a.recovered)}")
    if a.findings:
        table = FitTable(title_justify="left")
        for col in ("severity", "kind", "subject", "problem", "where"):
            table.add_column(col)
        for f in a.findings:
            sev = "[red]error[/]" if f.severity == "error" else "[yellow]warning[/]"
            table.add_row(sev, f.kind, escape(f.subject), escape(f.message), escape(f.where))
        console.print(table)
    if a.warnings and a.passed:
        console.print(f"{a.warnings} warning(s); warnings do not fail the check.")
    close(console, audit_verdict(a))


def audit_verdict(a: RegistrationAudit) -> Verdict:
    problems = f"{a.errors} inconsistenc{'y' if a.errors == 1 else 'ies'}"
    return Verdict("PASS" if a.passed else "FAIL",
                   f"register --check: {'consistent' if a.passed else problems} in MindIE-SD {a.target_version}"
                   + (f" ({a.warnings} warning(s))" if a.warnings else ""))
