from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options
from sdcompile.core.profiles.advice import DEFAULT_INFLATION, DEFAULT_SHARE


def copy_audit(
    eager: Path = typer.Argument(..., help="Eager run's profile: kernel_details.csv, ASCEND_PROFILER_OUTPUT/, "
                                 "a *_ascend_pt/ folder or a folder of ranks."),
    compiled: Path = typer.Argument(..., metavar="COMPILE", help="Compiled run's profile (same forms)."),
    attn: options.Attn = None,
    log: Path | None = typer.Option(None, "--log", help="Compiled run's log: its pattern hits feed the advice."),
    max_inflation: float | None = typer.Option(
        None, "--max-inflation", envvar="SDCOMPILE_MAX_INFLATION", show_envvar=False,
        help="CI gate: exit 1 when copy inflation (compile/eager) exceeds this ratio."),
    metric: options.Metric = "auto",
    inflation_threshold: float = typer.Option(DEFAULT_INFLATION, "--inflation-threshold", help="Copy inflation (by "
                                              "--inflation-metric) treated as a Copy problem by the advice "
                                              "(heuristic: the recipe's 'doubling')."),
    share_threshold: float = typer.Option(DEFAULT_SHARE, "--share-threshold", help="Compiled copy share of kernel time "
                                          "treated as a Copy problem by the advice (heuristic; NPU profiles only)."),
    step: int | None = typer.Option(None, "--step", help="Audit only this Step Id."),
    catalog: Path | None = options.KernelCatalog,
    session: list[str] | None = options.Session,
    rank: int | None = options.Rank,
    top: int = typer.Option(15, "--top", help="Rows of the 'grew most' table.", min=1),
    html: Path | None = options.Html,
    model: str | None = typer.Option(None, "--model", help="The zoo model the profiles come from: its attention "
                                     "dimensionality (class name) and, with --op, the pattern hits integrate "
                                     "recorded feed the advice; with --op the verdict is recorded in the workspace."),
    op: str | None = typer.Option(None, "--op", help="With --model: the op whose lifecycle records this audit "
                                  "(rmsnorm, rope, adaln, gelu or an alias such as rms_norm, RotaryMul, adln)."),
    repo: Path | None = typer.Option(
        None, "--repo", envvar="SDCOMPILE_REPO", show_envvar=False,
        help="MindIE-SD tree whose CompilationConfig fields decide which remedies are offered. Default: "
        "$SDCOMPILE_REPO, else search upward, else MindIE-SD 3.1.0's documented fields."),
    force: bool = options.Force,
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """Phase 7: copy kernels (InplaceCopy, ViewCopy, TensorMove, StridedSlice, ...) eager vs compile, their
    inflation, and the remedies in order (A fix the patterns, B VAE eager, C ACLGraph), as the target's
    CompilationConfig offers them. Exit 1 when --max-inflation is exceeded."""
    from functools import partial

    from sdcompile.phases.copy_audit.phase import model_inputs, run_copy_audit
    from sdcompile.phases.copy_audit.render import render_copy_audit, verdict
    from sdcompile.rendering.output import emit, message

    if html is not None:  # before the work: a long run must not end in a path it cannot write
        from sdcompile.util.input_checks import check_output_file

        check_output_file(html, force, "--html")
    from sdcompile.phases.pair_scope import record_key

    attention, attention_from, hits, hits_from = model_inputs(model, op, workdir, attn.lower() if attn else None)
    record_as = record_key(model, None, op, catalog) if model and op else None

    def write_html(report) -> list[Path]:
        from sdcompile.html.profiles import write_copy_audit_html

        write_copy_audit_html(report, html, force=force, subject=" / ".join(record_as) if record_as else (model or ""))
        message(f"wrote {html}")
        return [html]

    report = run_copy_audit(
        eager, compiled, attention=attention, attention_from=attention_from, pattern_hits=hits,
        pattern_hits_from=hits_from, log=log, max_inflation=max_inflation,
        metric=metric, inflation_threshold=inflation_threshold, share_threshold=share_threshold, step=step,
        catalog_file=catalog, session=tuple(session or ()), rank=rank, repo=repo, record_as=record_as,
        workdir=workdir, evidence=write_html if html is not None else None,
    )
    emit(report, json_, partial(render_copy_audit, top=top), verdict)
    if report.verdict == "fail":
        raise typer.Exit(1)
