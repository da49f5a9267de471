from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


def doctor(
    repo: Path | None = options.Repo,
    json_: bool = options.Json,
) -> None:
    """This environment (Python, torch, torch_npu real or emulated, diffusers, MindIE-SD, device) and the
    version-dependent behaviours of torch and torch_npu that apply here. Ends with one verdict line; exit 3 on a
    problem (an unsupported or missing torch, ...)."""
    from sdcompile.phases.doctor.phase import run_doctor
    from sdcompile.phases.doctor.render import render_doctor, verdict
    from sdcompile.rendering.output import emit
    from sdcompile.util.errors import EXIT_ENVIRONMENT

    report = run_doctor(repo)
    emit(report, json_, render_doctor, verdict)
    if not report.ok:
        raise typer.Exit(EXIT_ENVIRONMENT)
