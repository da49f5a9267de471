from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


def backends(
    repo: Path | None = typer.Option(
        None, "--repo", envvar="SDCOMPILE_REPO", show_envvar=False,
        help="MindIE-SD tree whose CompilationConfig says which ACLGraph modes it offers. Default: $SDCOMPILE_REPO, "
        "else search upward, else MindIE-SD 3.1.0's documented fields."),
    json_: bool = options.Json,
) -> None:
    """What compiles a model: MindIE-SD's default path (MindieSDBackend) and its ACLGraph modes, as the target's
    CompilationConfig offers them, and torchair's torchair_ge and npugraph_ex, outside MindIE-SD (its fusions are
    lost under them); availability here, and how they differ."""
    from sdcompile.phases.backends.phase import collect_backends
    from sdcompile.phases.backends.render import render_backends, verdict
    from sdcompile.rendering.output import emit

    emit(collect_backends(repo=repo), json_, render_backends, verdict)
