from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sdcompile.cli import options
from sdcompile.core.profiles.advice import DEFAULT_INFLATION
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE


@options.model_options
def run(
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    op: Annotated[options.Op, options.op_option(
        "The primitive to take through the lifecycle: rmsnorm, rope, adaln or gelu.")] = "rmsnorm",
    dtype: options.DtypeOpt = "bf16",
    plain_cpu: bool = options.PlainCpu,
    timeout: float | None = options.Timeout,
    path: options.PathOpt = "auto",
    name: options.NameOpt = None,
    repo: Path | None = typer.Option(None, "--repo", help="Your MindIE-SD tree (the folder holding mindiesd/), which "
                                     "scaffold and register then edit. Default: a scratch copy of the real release "
                                     "from the package cache, kept in the workspace ($SDCOMPILE_REPO is not read: "
                                     "your tree is edited only when named here)."),
    restart: bool = typer.Option(False, "--restart", help="Run all seven phases again (on a fresh scratch copy), "
                                 "instead of keeping those that passed with the same inputs."),
    min_cosine: float = typer.Option(
        DEFAULT_MIN_COSINE, "--min-cosine", envvar="SDCOMPILE_MIN_COSINE", show_envvar=False,
        help="Numerics gate of verify and integrate: cosine of compiled vs eager outputs (default 1 - 2**-7)."),
    max_inflation: float = typer.Option(
        DEFAULT_INFLATION, "--max-inflation", envvar="SDCOMPILE_MAX_INFLATION", show_envvar=False,
        help="Gate of copy-audit: copy-kernel inflation (compile/eager) allowed, by time on an NPU and by count on "
        "CPU captures. Default 2, the recipe's 'doubling' (a heuristic)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Preview: phases 1-3 with scaffold and register writing "
                                 "nothing to the tree (their files and edits are shown as diffs), then stop; "
                                 "phases 4-7 need those files. Nothing is kept for resuming."),
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """All seven phases for one model/op pair, in order, in one process: analyze, scaffold, register, verify,
    debug, integrate (after profiling eager and compiled runs), copy-audit. Each gate is recorded in the workspace;
    the run stops at the first that fails and prints the commands to run next. Run it again to resume: phases that
    passed with the same inputs are kept (phases 4-7 run again when the target's sources changed). Ends with the
    lifecycle table and a Markdown report. Exit 1 when a gate fails."""
    model, model_file, build = chosen
    import contextlib
    import sys

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from sdcompile.lifecycle.pipeline import RunListener, run_lifecycle
    from sdcompile.lifecycle.render import gate_line, render_run, verdict
    from sdcompile.rendering.output import emit, stderr
    options.writable_workdir(workdir)  # every phase records there, a dry run's analyze too

    class _Lines(RunListener):
        """Each gate as one line (what a CI log keeps)."""

        def phase_done(self, outcome) -> None:
            stderr().print(gate_line(outcome), highlight=False)

    class _Bar(_Lines):
        """A live progress bar above the gate lines, on a terminal."""

        def __init__(self, progress: Progress):
            self.progress = progress
            self.task = progress.add_task("lifecycle", total=7, step="")

        def phase_started(self, number: int, phase: str) -> None:
            self.progress.update(self.task, description=f"phase {number}/7 {phase}", step="starting")

        def phase_progress(self, text: str) -> None:
            self.progress.update(self.task, step=text[:90])

        def phase_done(self, outcome) -> None:
            self.progress.console.print(gate_line(outcome), highlight=False)
            self.progress.update(self.task, advance=1, step="")

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("[dim]{task.fields[step]}"))
    # rich ends a progress display with a newline where stderr is not a terminal: a CI log gets plain lines.
    progress = Progress(*columns, console=stderr(), transient=True) if stderr().is_terminal else None
    # The phases run library code that may print; stdout carries only the result (one JSON document with --json).
    with progress or contextlib.nullcontext(), contextlib.redirect_stdout(sys.stderr):
        result = run_lifecycle(model, model_file, op, dtype, plain_cpu, name, repo, workdir, restart, min_cosine,
                               max_inflation, path=path, listener=_Bar(progress) if progress else _Lines(),
                               dry_run=dry_run, timeout=timeout, build=build)
    emit(result, json_, render_run, verdict)
    if not result.passed:
        raise typer.Exit(1)
