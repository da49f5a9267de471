from __future__ import annotations

from pathlib import Path

from sdcompile.cli import options


def status(
    repo: Path | None = options.Repo,
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """Show every model/op pair's seven phases, and the target's registered pattern groups in registry order."""
    from sdcompile.phases.status.phase import collect_status
    from sdcompile.phases.status.render import render_status, verdict
    from sdcompile.rendering.output import emit, message

    report = collect_status(repo, workdir, require_target=repo is not None)
    emit(report, json_, render_status, verdict)
    if report.target is None and repo is None:
        message(f"note: {report.target_error}")
