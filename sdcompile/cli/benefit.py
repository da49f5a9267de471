from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options
from sdcompile.phases.benefit.results import DEFAULT_MAX_REGRESSION


@options.model_options
def benefit(
    off: Path | None = typer.Argument(None, help="The run with the fusion off (its group left out), or the eager run: "
                                      "kernel_details.csv, ASCEND_PROFILER_OUTPUT/, a *_ascend_pt/ folder or a "
                                      "folder of ranks."),
    on: Path | None = typer.Argument(None, help="The run with the fusion on (same forms)."),
    op: str | None = typer.Option(None, "--op", help="The fused op to weigh (rmsnorm, rope, adaln, gelu or an alias); "
                                  "default: every op whose fused kernel is launched more often when on."),
    max_regression: float = typer.Option(
        DEFAULT_MAX_REGRESSION, "--max-regression", help="Exit 1 when the fusion loses more than this percentage of "
        "the off side's step (kernel time on an NPU, data moved on CPU captures). The default is the recipe's noise "
        "floor."),
    hits: float | None = typer.Option(None, "--hits", help="Pattern replacements per step the fusion made: fewer "
                                      "fused launches than this is R4. Default: the fused calls the compiled graphs "
                                      "made, when `sdcompile profile` made both sides."),
    log: Path | None = typer.Option(None, "--log", help="The ON run's log: the fused kernels' `fallback` prints "
                                    "are R4's evidence."),
    step: int | None = typer.Option(None, "--step", help="Weigh only this Step Id."),
    catalog: Path | None = options.KernelCatalog,
    session: list[str] | None = options.Session,
    rank: int | None = options.Rank,
    top: int = typer.Option(12, "--top", help="Rows of the changed-kernels table (-v: all).", min=1),
    html: Path | None = options.Html,
    force: bool = options.Force,
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    leave_out: list[str] | None = typer.Option(
        None, "--leave-out", help="With --model: the group (or flag) the off side is compiled without; repeat for "
        "several. Default: the groups the pair's scaffold record relies on, else the eager model."),
    dtype: options.DtypeOpt = "bf16",
    plain_cpu: bool = options.PlainCpu,
    timeout: float | None = options.Timeout,
    repo: Path | None = options.Repo,
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """Phase 6, hit is not gain: the kernels that vanished and appeared with a fusion on, the net per step against
    the region's ceiling, and each copy, cast or move it brought placed by its neighbours and named R1-R5. --model
    profiles the two sides itself. Exit 1 when the fusion loses beyond --max-regression, when nothing fused
    appeared, or when the claimed gain exceeds its region (a bookkeeping error)."""
    from functools import partial

    from sdcompile.phases.benefit.phase import run_benefit
    from sdcompile.phases.benefit.render import render_benefit, verdict
    from sdcompile.rendering.output import emit, message

    model, model_file, build = chosen
    named = bool(model or model_file or build.capture or build.config)
    if html is not None:  # before the work: a long run must not end in a path it cannot write
        from sdcompile.util.input_checks import check_output_file

        check_output_file(html, force, "--html")
    record_as, made, raising = None, (), ()
    if named:
        off, on, made, raising, record_as = _make_sides(off, on, op, model, model_file, leave_out, build, dtype, repo,
                                               plain_cpu, timeout, catalog, workdir, message)
    report = run_benefit(off, on, op=op, step=step, catalog_file=catalog, session=tuple(session or ()), rank=rank,
                         hits=hits, log=log, max_regression=max_regression, made=made, raising=raising,
                         record_as=record_as, workdir=workdir, evidence=_html_writer(html, force, record_as))
    emit(report, json_, partial(render_benefit, top=top), verdict)
    if not report.passed:
        raise typer.Exit(1)


def _html_writer(html: Path | None, force: bool, record_as):
    if html is None:
        return None

    def write(report) -> list[Path]:
        from sdcompile.html.benefit import write_benefit_html
        from sdcompile.rendering.output import message

        write_benefit_html(report, html, force=force, subject=" / ".join(record_as) if record_as else "")
        message(f"wrote {html}")
        return [html]

    return write


def _make_sides(off, on, op, model, model_file, leave_out, build, dtype, repo, plain_cpu, timeout, catalog, workdir,
                message):
    """--model: the two profiles made in the pair's folder (benefit/off, benefit/on)."""
    from sdcompile.phases.benefit.phase import profile_sides
    from sdcompile.phases.pair_scope import record_key
    from sdcompile.phases.scaffold.facts import pair_facts
    from sdcompile.util.errors import BadInput
    from sdcompile.workspace.store import Workspace

    if off is not None or on is not None:
        raise BadInput("benefit takes either two profiles or --model, not both",
                       "drop OFF and ON to profile the model here, or drop --model to weigh your own profiles")
    if op is None:
        raise BadInput("benefit --model needs --op: the op whose groups are left out on the off side",
                       "add --op rmsnorm (or rope, adaln, gelu)")
    record_as = record_key(model, model_file, op, catalog, build)
    ws = Workspace(workdir)
    facts = pair_facts(ws, *record_as)
    off, on, made, raising = profile_sides(model, model_file, record_as[1], ws.pair_dir(*record_as) / "benefit",
                                  leave_out=tuple(leave_out or ()), groups_from=facts.carriers if facts else (),
                                  dtype=dtype, repo=repo, plain_cpu=plain_cpu, progress=message, timeout=timeout,
                                  build=build)
    return off, on, made, raising, record_as
