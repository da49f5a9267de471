"""Options shared by several commands, declared once so their names, env vars and help never drift."""

from __future__ import annotations

from pathlib import Path

import typer

Json = typer.Option(False, "--json", help="Print one JSON document to stdout (messages go to stderr).")
Repo = typer.Option(
    None,
    "--repo",
    envvar="SDCOMPILE_REPO",
    help="MindIE-SD source tree (the folder holding mindiesd/). Default: $SDCOMPILE_REPO, else search upward "
    "from the current folder.",
    show_envvar=False,
)
Workdir = typer.Option(
    None,
    "--workdir",
    envvar="SDCOMPILE_WORKDIR",
    help="Workspace folder for artifacts and lifecycle state. Default: $SDCOMPILE_WORKDIR, else ./.sdcompile",
    show_envvar=False,
)
DryRun = typer.Option(False, "--dry-run", help="Show every change as a unified diff and write nothing.")
Force = typer.Option(False, "--force", help="Overwrite files that already exist.")


def repo_path(value: Path | None) -> Path | None:
    return Path(value) if value else None
