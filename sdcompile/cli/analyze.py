from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


def analyze(
    model: str | None = options.Model,
    model_file: str | None = options.ModelFile,
    op: str = typer.Option("all", "--op", help="Primitive to analyze: rmsnorm, rope, adaln, gelu, or all. "
                           "Exit 1 when a primitive named here is absent from the model (not with all)."),
    dtype: str = options.Dtype,
    plain_cpu: bool = options.PlainCpu,
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """Phase 1: find where each primitive (RMSNorm, RoPE, AdaLN, GELU) is implemented and used by running the
    model once; extract the source and each site's ATen subgraph as the pattern pass sees it; say where its
    tensors come from and so which path (register_replacement or custom graph pass) a fusion takes."""
    from sdcompile.phases.analyze import analyze as run_analyze
    from sdcompile.report.analyze import render_analyze
    from sdcompile.report.output import emit, stderr

    with stderr().status("analyze: starting ...") as status:
        result = run_analyze(model, model_file, op, dtype, plain_cpu, workdir,
                             progress=lambda text: status.update(f"analyze: {text} ..."))
    emit(result, json_, render_analyze)
    # The process ends here. Compiling leaves a large heap of graph objects behind, and the interpreter's final
    # garbage collection over it takes seconds; frozen objects are exempt, and nothing needs collecting now.
    import gc

    gc.freeze()
    if result.gate == "fail":
        raise typer.Exit(1)
