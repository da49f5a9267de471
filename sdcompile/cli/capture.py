from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


def capture(
    program: list[str] = typer.Argument(None, metavar="-- COMMAND...", help="The program that runs your pipeline, "
                                        "after --: python infer.py --steps 2."),
    out: Path = typer.Option(Path("model.sdcap"), "--out", "-o", help="The capture file to write."),
    calls: int = typer.Option(1, "--calls", min=1, help="Forward calls of the transformer to record (--model-capture "
                              "replays the first)."),
    keep_running: bool = typer.Option(False, "--keep-running", help="Let the program finish after the capture "
                                      "(by default it is stopped once the file is written)."),
    force: bool = options.Force,
    json_: bool = options.Json,
) -> None:
    """Run your pipeline and record its transformer: the class, its real config and the inputs of its first
    forward(s) (tensors copied to the CPU; no weights). Replay it anywhere with --model-capture FILE, also on a
    machine without an NPU or the pipeline: `sdcompile analyze --model-capture FILE --num-layers 1`. In Python:
    `with sdcompile.capture(FILE): pipe(...)`. Record the transformer before torch.compile wraps it."""
    from sdcompile.phases.capture.phase import capture_program
    from sdcompile.phases.capture.render import render_capture, verdict
    from sdcompile.rendering.output import emit

    result = capture_program(out, tuple(program or ()), calls=calls, keep_running=keep_running, force=force)
    emit(result, json_, render_capture, verdict)
