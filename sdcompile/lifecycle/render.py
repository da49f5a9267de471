"""Rendering of `sdcompile run`: the lifecycle table on stdout, and the Markdown report kept in the workspace."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from rich.console import Console
from rich.markup import escape

from sdcompile.lifecycle.results import PhaseOutcome, RunResult
from sdcompile.rendering.closing import Verdict, close, print_commands
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line
from sdcompile.util.log import verbosity

STATUS_STYLE = {"pass": "[green]pass[/]", "fail": "[red]FAIL[/]", "info": "[cyan]info[/]", "skipped": "[dim]skipped[/]",
                "kept": "[green]kept[/]", "not run": "[dim]not run[/]"}


def gate_line(outcome: PhaseOutcome) -> str:
    """One line per finished phase, as the run prints it while it goes (rich markup)."""
    status = STATUS_STYLE.get(outcome.status, outcome.status)
    took = f" ({outcome.seconds:.1f}s)" if outcome.status not in ("kept", "not run") else ""
    return f"phase {outcome.number} {outcome.phase}: {status}{took} — {escape(outcome.summary)}"


def render_run(console: Console, result: RunResult) -> None:
    console.print(f"[bold]sdcompile run {result.model} {result.op}[/] — {result.dtype} · device {result.device} · "
                  f"MindIE-SD {result.target_version}", highlight=False)
    console.print(f"  target     {escape(result.target)}", highlight=False)
    console.print(f"             {escape(result.target_source)}", highlight=False)
    console.print(f"  workspace  {escape(result.pair_folder)}", highlight=False)
    console.print(f"  versions   {escape(versions_line(result.versions))}", highlight=False)
    table = FitTable(title="Lifecycle", head=2)
    table.add_column("#", justify="right")
    table.add_column("phase")
    table.add_column("gate")
    table.add_column("verdict")
    table.add_column("s", justify="right")
    table.add_column("what it showed")
    for p in result.phases:
        table.add_row(str(p.number), p.phase, escape(p.gate), STATUS_STYLE.get(p.status, p.status),
                      f"{p.seconds:.1f}" if p.status not in ("kept", "not run") else "", escape(p.summary))
    console.print(table)
    if result.dry_run and result.passed:
        if result.previews:
            console.print("the edits phases 1-3 would make:", highlight=False)
        for diff in result.previews:
            console.print(escape(diff.rstrip("\n")), highlight=False, soft_wrap=True)
    if result.dry_run or not result.passed or result.findings:
        print_commands(console, result.next_commands)
    _not_exercised(console, result)
    if result.report:
        console.print(f"report: {escape(result.report)}", highlight=False)
    close(console, verdict(result))


def verdict(result: RunResult) -> Verdict:
    """The run's closing line."""
    if result.dry_run and result.passed:
        return Verdict("DRY RUN", f"phases 1-3 pass; nothing was written to {result.target}"
                                  + ("" if result.previews else ", and no edit to an existing file would be made"))
    if result.passed:
        kept = sum(1 for p in result.phases if p.status == "kept")
        kept_text = f" ({kept} phase(s) kept from an earlier run with the same inputs)" if kept else ""
        return Verdict("PASS", "every gate passed" + kept_text + "".join(f"; {f}" for f in result.findings))
    phase = next(p for p in result.phases if p.phase == result.stopped_at)
    return Verdict("FAIL", f"{'dead end' if result.dead_end else 'stopped'} at phase {phase.number} ({phase.phase}): "
                           f"{result.stop_reason or ''}")


def _not_exercised(console: Console, result: RunResult) -> None:
    """What this machine could not run, listed once: by the run whose phases ran here (a rerun that keeps every
    phase names only how many, unless -v) and always in the report."""

    if not result.not_exercised:
        return
    if all(p.status == "kept" for p in result.phases) and verbosity() == 0:
        console.print(f"not exercised on this machine: the same {len(result.not_exercised)} item(s) as when these "
                      "phases ran (-v lists them; so does the report)", highlight=False)
        return
    console.print("not exercised on this machine:", highlight=False)
    for item in result.not_exercised:
        console.print(f"  - {escape(item)}", highlight=False)


def markdown_report(result: RunResult, pages: tuple[str, ...] = ()) -> str:
    """report.md; `pages`: the HTML reports beside it (run_pages.report_pages)."""
    stopped = "stopped (dead end)" if result.dead_end else "stopped"
    verdict = ("every gate passed" + "".join(f"; {f}" for f in result.findings) if result.passed else
               f"{stopped} at {result.stopped_at}: {result.stop_reason}")
    lines = [
        f"# sdcompile run — {result.model} / {result.op}",
        "",
        f"**Verdict:** {verdict}",
        "",
        f"- dtype {result.dtype}; device `{result.device}` ({result.device_reason})",
        f"- target: MindIE-SD {result.target_version} at `{result.target}` — {result.target_source}",
        f"- versions: {versions_line(result.versions)}",
        f"- workspace: `{result.pair_folder}`",
        f"- {result.seconds:.1f} s" + (f"; resumed from {result.resumed_from}" if result.resumed_from not in
                                       (None, "analyze") else ""),
        "",
        f"- commands below run from `{result.cwd}`; evidence paths are relative to the workspace `{result.workspace}`",
        "",
        "## Lifecycle",
        "",
        "| # | phase | verdict | seconds | gate | what it showed |",
        "|---|---|---|---|---|---|",
    ]
    for p in result.phases:
        lines.append(f"| {p.number} | {p.phase} | {_verdict(p)} | {_seconds(p)} | {_cell(p.gate)} | "
                     f"{_cell(p.summary)} |")
    links = [f"[{name}]({name})" for name in pages]
    if links:
        lines += ["", f"HTML reports beside this file: {', '.join(links)}"]
    if result.next_commands and (not result.passed or result.findings):
        lines += ["", "## Next", "", "```sh", *result.next_commands, "```"]
    lines += ["", "## Each phase", ""]
    for p in result.phases:
        lines.append(f"### {p.number}. {p.phase} — {p.status}")
        lines.append("")
        lines.append(p.summary)
        lines.append("")
        if p.device != "n/a":
            lines.append(f"- device: {p.device}")
        if p.command:
            lines.append(f"- on its own: `{p.command}`")
        for path in p.evidence:
            lines.append(f"- evidence: [`{path}`]({_from_report(result, path)})")
        lines.append("")
    if result.not_exercised:
        lines += ["## Not exercised on this machine", ""]
        lines += [f"- {item}" for item in result.not_exercised]
        lines.append("")
    lines += ["## Again", "", "```sh", result.resume_command, "```", "",
              "Phases that passed with the same inputs are kept; add `--restart` to run all seven again."
              + (f" This run stops at {result.stopped_at} the same way until the hand-written way out above is in "
                 "the tree it runs on." if result.dead_end else ""), ""]
    return "\n".join(lines)


def _verdict(p: PhaseOutcome) -> str:
    """A kept phase shows the verdict it was kept with, so a rerun's report keeps the first run's."""
    return f"{p.verdict} (kept)" if p.status == "kept" and p.verdict else p.status


def _seconds(p: PhaseOutcome) -> str:
    if p.status == "kept":
        return f"{p.kept_seconds:.1f} (then)" if p.kept_seconds is not None else ""
    return f"{p.seconds:.1f}" if p.status != "not run" else ""


def _from_report(result: RunResult, evidence: str) -> str:
    """A workspace-relative evidence path as a link relative to report.md (in the run folder of the workspace)."""
    target = Path(result.workspace) / evidence
    href = os.path.relpath(target, Path(result.report).parent) if result.report else str(target)
    return quote(Path(href).as_posix())


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
