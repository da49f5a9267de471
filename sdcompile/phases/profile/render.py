"""Rendering of `sdcompile profile`."""

from __future__ import annotations

from rich.console import Console

from sdcompile.phases.profile.results import ProfileReport
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.versions import versions_line


def render_profile(console: Console, report: ProfileReport) -> None:
    if report.dry_run:
        for note in report.notes:
            console.print(f"dry run: {note}", highlight=False)
        close(console, verdict(report))
        return
    hits = f"; pattern hits while compiling: {report.pattern_hits}" if report.pattern_hits is not None else ""
    console.print(f"[bold]{report.model}[/] {report.mode} (backend {report.backend}) on {report.device}: "
                  f"{report.rows:,} kernel rows over {report.steps} step(s) in {report.seconds:.2f} s{hits}",
                  highlight=False)
    console.print(f"profile: {report.run_dir}", highlight=False)
    console.print(f"source: {report.source}", highlight=False)
    if report.versions is not None:
        console.print(versions_line(report.versions, target=report.versions.target_version is not None),
                      highlight=False)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)
    close(console, verdict(report))


def verdict(report: ProfileReport) -> Verdict:
    if report.dry_run:
        return Verdict("DRY RUN", f"nothing profiled; {report.model} {report.mode} would be")
    return Verdict("PASS", f"{report.model} {report.mode}: {report.rows:,} kernel rows in {report.kernel_details}")
