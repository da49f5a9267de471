from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


@options.model_options
def integrate(
    eager: Path | None = typer.Argument(None, help="Eager run's profile: kernel_details.csv, ASCEND_PROFILER_OUTPUT/, "
                                        "a *_ascend_pt/ folder or a folder of ranks."),
    compiled: Path | None = typer.Argument(None, metavar="COMPILE", help="Compiled run's profile (same forms)."),
    op: str | None = typer.Option(None, "--op", help="Fused op to check (rmsnorm, rope, adaln, gelu or an alias "
                                  "such as rms_norm, RotaryMul, adln, FastGelu)."),
    log: Path | None = typer.Option(None, "--log", help="Log of the compiled full-model run "
                                    "(MINDIE_LOG_LEVEL=debug): pattern hits and whether it completed."),
    done_marker: str | None = typer.Option(None, "--done-marker", help="Regex matching the log line that shows the "
                                           "run completed (layer 3 passes only when it is found)."),
    step: int | None = typer.Option(None, "--step", help="Compare only this Step Id."),
    catalog: Path | None = options.KernelCatalog,
    session: list[str] | None = options.Session,
    rank: int | None = options.Rank,
    top: int = typer.Option(25, "--top", help="Rows of the kernel diff table.", min=1),
    html: Path | None = options.Html,
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    dtype: options.DtypeOpt = "bf16",
    plain_cpu: bool = options.PlainCpu,
    timeout: float | None = options.Timeout,
    min_cosine: float | None = typer.Option(
        None, "--min-cosine", envvar="SDCOMPILE_MIN_COSINE", show_envvar=False,
        help="Layer 3 with --model: least cosine similarity of compiled vs eager outputs (default: verify's)."),
    repo: Path | None = options.Repo,
    force: bool = options.Force,
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """Phase 6: pattern hits, kernel diff of eager vs compile profiles (fused kernel in, eager chain out),
    regression. Layers 1 and 3 come from --log, else from compiling --model through the target's backend
    (emulated or real NPU); --model with --op also records the verdict in the workspace. Exit 1 when a layer
    fails."""
    from functools import partial

    from sdcompile.phases.integrate.phase import run_integrate
    from sdcompile.phases.integrate.render import render_integrate, verdict
    from sdcompile.rendering.output import emit, message

    model, model_file, build = chosen
    named = bool(model or model_file or build.capture or build.config)
    if html is not None:  # before the work: a long run must not end in a path it cannot write
        from sdcompile.util.input_checks import check_output_file

        check_output_file(html, force, "--html")
    from sdcompile.phases.pair_scope import record_key

    # the verdict is recorded in the workspace pair the model and op name (the pair's lock held by the phase)
    record_as = record_key(model, model_file, op, catalog, build) if named and op else None

    def write_html(report) -> list[Path]:
        from sdcompile.html.profiles import write_integrate_html

        write_integrate_html(report, html, force=force, subject=" / ".join(record_as) if record_as else "")
        message(f"wrote {html}")
        return [html]

    report = run_integrate(eager, compiled, op=op, log=log, done_marker=done_marker, step=step, catalog_file=catalog,
                           model=model, model_file=model_file, dtype=dtype, repo=repo, plain_cpu=plain_cpu,
                           min_cosine=min_cosine, session=tuple(session or ()), rank=rank, progress=message,
                           timeout=timeout, build=build, record_as=record_as, workdir=workdir,
                           evidence=write_html if html is not None else None)
    emit(report, json_, partial(render_integrate, top=top), verdict)
    if report.verdict == "fail":
        raise typer.Exit(1)
