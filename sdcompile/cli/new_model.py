from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


def new_model(
    class_name: str = typer.Argument(..., metavar="CLASS", help="A diffusers transformer class "
                                     "(CogView4Transformer2DModel), or a zoo model's name for its class."),
    out: Path = typer.Option(Path("model.py"), "--out", "-o", help="The factory file to write."),
    force: bool = options.Force,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the file instead of writing it (it still runs "
                                 "once, from a temporary copy)."),
    size: options.SizeOpt = None,
    config: options.ConfigOpt = None,
    num_layers: options.NumLayersOpt = None,
    inputs: options.InputsOpt = None,
    timeout: float | None = options.Timeout,
    json_: bool = options.Json,
) -> None:
    """Write a factory for a diffusers class: the config and the example inputs `--model CLASS` would use, spelled
    out as code to edit (a real config.json's values, the inputs your pipeline passes). It runs once from the file,
    and the output says which primitives its forward ran. Pass the file to any command with --model-file FILE:build."""
    from sdcompile.phases.new_model.phase import new_model as write_factory
    from sdcompile.phases.new_model.render import render_new_model, verdict
    from sdcompile.rendering.output import emit, stderr

    with stderr().status("new-model: starting") as status:
        result = write_factory(class_name, out, force=force, dry_run=dry_run, timeout=timeout,
                               progress=lambda text: status.update(f"new-model: {text}"),
                               build=options.model_build(size, config, num_layers, inputs))
    emit(result, json_, render_new_model, verdict)
    if result.exit_code:
        raise typer.Exit(result.exit_code)
