from __future__ import annotations

import typer

from sdcompile.cli import options


def explain(
    topic: str | None = typer.Argument(None, help="A topic: mismatch, or a guide (graph-comparison, pattern-templates, "
                                       "registration, copy-elimination, backends, ...); omit to list them."),
    item: str | None = typer.Argument(None, help="An entry of the topic: for mismatch, the type number 1-7."),
    json_: bool = options.Json,
) -> None:
    """Reference text: the mismatch catalog (`explain mismatch 3`) and the guides, from the same data as docs/."""
    from sdcompile.phases.explain.phase import explain as run_explain
    from sdcompile.phases.explain.render import render_explain, verdict
    from sdcompile.rendering.output import emit

    emit(run_explain(topic, item), json_, render_explain, verdict)
