from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sdcompile.cli import options
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE

# 1 - 2**-7: the mirror image of upstream's `cosine > 2**-7`, which accepts almost anything.


@options.model_options
def verify(
    chosen: options.ModelChoice = options.MODEL_OPTIONS,
    op: Annotated[options.Op | None, options.op_option(
        "The op of the model/op pair (rmsnorm, rope, adaln, gelu): selects what the pair's scaffold record names "
        "(the groups it reused, the group or entries it generated, its custom pass), else its "
        "<Model><Op>PatternGroup, and records phase 4 for the pair.")] = None,
    group: list[str] | None = typer.Option(None, "--group", help="Verify this registered group (name or enable_* "
                                           "flag) instead of the pair's own; repeat for several, one report. Or a "
                                           "custom graph pass (<Model><Op>GraphPass): its generated test runs."),
    all_groups: bool = typer.Option(False, "--all-groups", help="Every group of the target, one table: does each "
                                    "replace its own search function, with what numerics, and where not, why."),
    dtype: options.DtypeOpt = "bf16",
    min_cosine: float = typer.Option(
        DEFAULT_MIN_COSINE, "--min-cosine", envvar="SDCOMPILE_MIN_COSINE", show_envvar=False,
        help="Numerics gate: cosine similarity of compiled vs eager outputs must be at least this (default 1 - "
        "2**-7). Upstream's own tests assert only > 2**-7; both verdicts are reported."),
    plain_cpu: bool = options.PlainCpu,
    timeout: float | None = options.Timeout,
    repo: Path | None = options.Repo,
    workdir: Path | None = options.Workdir,
    json_: bool = options.Json,
) -> None:
    """Phase 4: compile through the target's own MindieSDBackend with only the chosen pattern group enabled.

    Unit level: each pattern of the group against a module whose forward is its own search function, on its own
    example inputs — replacements (inductor's counter and the pass's log line), fused op present and original
    ops gone after the pass, cosine / max abs / max rel error vs eager; where a pattern does not replace, the
    first node pair at which the pattern as registered and the traced graph part, its mismatch type (1-7) and
    the fix, as `debug --group` reads it. With --model/--model-file, the same
    group on the tiny model: replacements and where they landed; a unit hit with no model hit is mismatch
    type 7. Gate (exit 1): every pattern's module replaced, fused op present, originals gone, cosine >=
    --min-cosine (and for a single group with a model, at least one model replacement). On a real NPU the
    compiled and eager modules are also timed. A custom graph pass (scaffold --path graph-pass) has no group: its
    generated test runs, and its verdict is the gate. A pair whose model graph already calls the fused op (scaffold
    said so) has nothing to verify: phase 4 is recorded as skipped.
    """
    model, model_file, build = chosen
    from sdcompile.phases.verify.phase import run_verify
    from sdcompile.phases.verify.render import render_verify, verdict
    from sdcompile.rendering.output import emit, stderr

    options.writable_workdir(workdir)  # the report and the verdict are written there after the checks
    with stderr().status("verify: starting", spinner="dots") as status:
        report = run_verify(
            repo=repo, workdir=workdir, group=group, all_groups=all_groups, model=model, model_file=model_file,
            op=op, dtype=dtype, min_cosine=min_cosine, plain_cpu=plain_cpu, timeout=timeout, build=build,
            progress=lambda text: status.update(f"verify: {text}"),
        )
    emit(report, json_, render_verify, verdict)
    if not report.passed:
        raise typer.Exit(1)
