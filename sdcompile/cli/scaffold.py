from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sdcompile.cli import options


@options.model_options
def scaffold(
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    op: Annotated[options.Op, options.op_option(
        "Primitive: rmsnorm, rope, adaln or gelu. Generation follows the op's recipes "
        "(sdcompile/catalogs/ops/<op>.toml); the reuse check runs for all.")] = "rmsnorm",
    dtype: options.DtypeList = "bf16",
    plain_cpu: bool = options.PlainCpu,
    timeout: float | None = options.Timeout,
    path: options.PathOpt = "auto",
    name: options.NameOpt = None,
    repo: Path | None = options.Repo,
    workdir: Path | None = options.Workdir,
    dry_run: bool = options.DryRun,
    force: bool = typer.Option(False, "--force", help="Generate even when the target's groups already replace every "
                               "site, and overwrite generated files that already exist."),
    json_: bool = options.Json,
) -> None:
    """Phase 2: reuse an existing pattern group when it already replaces the op's sites (checked site by site on
    the model's graph); otherwise generate a pattern (or a GraphPatternEntry carrier) from the model's own ATen
    subgraph, with its two-layer test, checked on the sites it came from before anything is written."""
    model, model_file, build = chosen
    from sdcompile.phases.scaffold.phase import scaffold as run_scaffold
    from sdcompile.phases.scaffold.render import reason_text, render_scaffold, verdict
    from sdcompile.rendering.output import emit, message, stderr

    if not dry_run:  # the outcome is recorded there after the model is traced
        options.writable_workdir(workdir)
    with stderr().status("scaffold: starting ...") as status:
        result = run_scaffold(model, model_file, op, dtype, plain_cpu, path, name, repo, workdir, dry_run, force,
                              progress=lambda text: status.update(f"scaffold: {text} ..."), timeout=timeout,
                              build=build)
    emit(result, json_, render_scaffold, verdict)
    if json_:
        for note in result.notes:
            message(f"note: {reason_text(note)}")
    if result.gate == "fail":
        raise typer.Exit(1)
