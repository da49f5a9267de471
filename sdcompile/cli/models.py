from __future__ import annotations

import typer

from sdcompile.cli import options


def models(
    names: list[str] | None = typer.Argument(None, metavar="[NAME]...", help="Only these (zoo names or diffusers "
                                             "class names)."),
    check: bool = typer.Option(False, "--check", help="Build each at each size and run one forward with its example "
                               "inputs, as --model does (a second to tens of seconds each on CPU); exit 1 when one "
                               "does not build."),
    size: options.SizeOpt = None,
    num_layers: options.NumLayersOpt = None,
    json_: bool = options.Json,
) -> None:
    """The models --model takes: the zoo's (a tiny config and inputs written for each) and every other diffusers
    transformer class installed (its default config shrunk, inputs synthesized from its forward). --check builds each
    at tiny size and at real size with --num-layers blocks (1 unless given), or at the one --size names; a real config
    too large for this machine's memory is said so, not built."""
    from sdcompile.phases.models.phase import list_models
    from sdcompile.phases.models.render import render_models, verdict
    from sdcompile.rendering.output import emit, stderr

    sizes = (size.value,) if size is not None else ("tiny", "real")
    with stderr().status("models: building each" if check else "models: listing"):
        report = list_models(tuple(names or ()), check, sizes, num_layers)
    emit(report, json_, render_models, verdict)
    if report.verdict == "fail":
        raise typer.Exit(1)
