from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


@options.model_options
def profile(
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    mode: options.Mode = ...,
    out: Path = typer.Option(..., "--out", help="Folder for the torch_npu-shaped profile "
                             "(<name>_<pid>_<timestamp>_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv)."),
    backend: options.Backend = "default",
    steps: int = typer.Option(2, "--steps", help="Profiled forward passes (Step Id 1..N), after one warm-up."),
    dtype: options.DtypeOpt = "bf16",
    plain_cpu: bool = options.PlainCpu,
    timeout: float | None = options.Timeout,
    repo: Path | None = options.Repo,
    catalog: Path | None = typer.Option(None, "--catalog", help="Extra kernel catalog (TOML) for the CPU op mapping."),
    force: bool = options.Force,
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be profiled and write nothing."),
    leave_out: list[str] = typer.Option([], "--leave-out", help="A pattern group (name or flag) to compile "
                                        "without, e.g. one raising in the matcher on this model, or a generated "
                                        "graph pass (its class) to run replacing nothing; repeatable."),
    json_: bool = options.Json,
) -> None:
    """Profile a tiny model eager or compiled into a torch_npu-shaped folder for integrate and copy-audit:
    torch_npu's profiler on an NPU, torch.profiler on CPU (labelled a CPU profile). A compiled forward that fails
    inside the tree's backend (a pattern group raising in the matcher) exits 1 naming the tree's file and the
    --leave-out that profiles without that group."""
    model, model_file, build = chosen
    from sdcompile.phases.profile.phase import run_profile
    from sdcompile.phases.profile.render import render_profile, verdict
    from sdcompile.rendering.output import emit, message

    report = run_profile(model, model_file, mode, out, backend=backend, steps=steps, dtype=dtype, repo=repo,
                         plain_cpu=plain_cpu, force=force, dry_run=dry_run, catalog_file=catalog, progress=message,
                         timeout=timeout, build=build, leave_out=tuple(leave_out))
    emit(report, json_, render_profile, verdict)
