from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sdcompile.cli import options


@options.model_options
def debug(
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    op: Annotated[options.Op | None, options.op_option(
        "The op whose sites to examine (rmsnorm, rope, adaln, gelu); without --group, every group of the target "
        "that replaces it.")] = None,
    group: list[str] = typer.Option([], "--group", help="A registered pattern group (name or enable_* flag); "
                                    "repeatable. Default: every group of --op."),
    pattern_file: Path | None = typer.Option(None, "--pattern-file", help="A pattern file (PatternBase classes, "
                                             "e.g. a scaffolded *_pattern.py) to debug instead of, or beside, the "
                                             "registered groups; imported inside the target's patterns package."),
    stage: options.Stage = "before-freezing",
    registry_order: bool = typer.Option(False, "--registry-order", help="Also apply every group the backend enables "
                                        "by default, in pattern_registry order (pattern files last): a site a group "
                                        "matches alone but an earlier-registered group replaces first is an ordering "
                                        "conflict (type 5)."),
    show_patterns: bool = typer.Option(False, "--patterns", help="Also print every pattern as registered "
                                       "(PatternPrettyPrinter) and its search graph with source lines."),
    dtype: options.DtypeOpt = "bf16",
    plain_cpu: bool = options.PlainCpu,
    timeout: float | None = options.Timeout,
    repo: Path | None = options.Repo,
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """Phase 5: why a pattern does (not) match — the graph the pass really sees, aligned node by node with the
    pattern as register_replacement registered it, at every candidate site.

    Reports graph breaks first (where dynamo ended each graph, and why), dumps the graphs (<stage>.<model>.txt with
    source lines, metadata.json), traces each pattern exactly as register_replacement traced it, finds every
    candidate site (phase-1 sites and op anchors such as rsqrt for RMSNorm), walks pattern and site from the output
    as the matcher does, and shows the first differing node pair side by side with its source lines and the
    differing field, classified into the mismatch types 1-7 with the fix (`sdcompile explain mismatch N`).
    Without --model/--model-file, each group is debugged against its own search functions. Exit 0 when every
    site matches (or already calls the fused op), 1 when a mismatch is found.
    """
    model, model_file, build = chosen
    from sdcompile.phases.debug.phase import run_debug
    from sdcompile.phases.debug.render import render_debug, verdict
    from sdcompile.rendering.output import emit, stderr

    options.writable_workdir(workdir)  # the dumps and the verdict are written there after the captures
    with stderr().status("debug: starting", spinner="dots") as status:
        result = run_debug(
            model=model, model_file=model_file, op=op, groups=tuple(group), pattern_file=pattern_file, stage=stage,
            dtype=dtype, plain_cpu=plain_cpu, repo=repo, workdir=workdir, registry_order=registry_order,
            timeout=timeout, build=build, progress=lambda text: status.update(f"debug: {text}"),
        )
    emit(result, json_, lambda console, r: render_debug(console, r, show_patterns), verdict)
    if not result.passed:
        raise typer.Exit(1)
