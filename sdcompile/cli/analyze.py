from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sdcompile.cli import options


@options.model_options
def analyze(
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    op: Annotated[options.OpOrAll, options.op_option(
        "Primitive to analyze: rmsnorm, rope, adaln, gelu, or all. Exit 1 when a primitive named here is absent "
        "from the model (not with all).", all_=True)] = "all",
    dtype: options.DtypeOpt = "bf16",
    timeout: float | None = options.Timeout,
    plain_cpu: bool = options.PlainCpu,
    workdir: Path | None = options.Workdir,
    repo: Path | None = options.CaptureRepo,
    after_freezing: Annotated[bool, typer.Option(
        "--after-freezing", help="Also run freeze() as the backend does after its pattern pass, and show how it "
        "holds each module tensor (the pattern pass, where every accepted carrier matches, runs before it).")] = False,
    json_: bool = options.Json,
) -> None:
    """Phase 1: find where each primitive (RMSNorm, RoPE, AdaLN, GELU) is implemented and used by running the
    model once; extract the source and each site's ATen subgraph as the pattern pass sees it; say where its
    tensors come from and so which carrier (register_replacement or GraphPatternEntry) a fusion takes."""
    model, model_file, build = chosen
    import gc

    from sdcompile.phases.analyze.phase import analyze as run_analyze
    from sdcompile.phases.analyze.render import render_analyze, verdict
    from sdcompile.rendering.output import emit, stderr

    # A one-shot process: the cyclic collector would walk torch's and diffusers' whole heap again and again while
    # they import, the model runs and dynamo traces (about a tenth of the run); refcounting still frees the rest.
    # At the end the heap is frozen: the interpreter's final collection over everything compiling left behind
    # takes seconds, and frozen objects are exempt from it.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with stderr().status("analyze: starting ...") as status:
            result = run_analyze(model, model_file, op, dtype, plain_cpu, workdir,
                                 progress=lambda text: status.update(f"analyze: {text} ..."), repo=repo,
                                 timeout=timeout, build=build, after_freezing=after_freezing)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    emit(result, json_, render_analyze, verdict)
    if result.gate == "fail":
        raise typer.Exit(1)
