"""`sdcompile integrate` (phase 6): three layers, in order, each with a verdict.

  1 pattern hits   from the compile log's "PatternMatchPass replace N patterns." lines, or (--model) by compiling
                   the tiny model through the target's MindieSDBackend and counting replacements and fused nodes
  2 kernel diff    eager vs compile profiles: eager-only / compile-only kernels, same-name deltas by impact,
                   and for --op whether its fused kernel appears and its eager chain disappears
  3 regression     the compiled full-model run completed (from the log), or (--model) the compiled tiny model
                   ran and agrees with eager
"""

from __future__ import annotations

from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.compile_log import CompileLog, read_log
from sdcompile.core.profiles.diff import KernelDiff, OpCheck, check_op, kernel_diff
from sdcompile.core.profiles.notes import comparability_notes
from sdcompile.core.profiles.profile import load_profile, summarize
from sdcompile.core.target.discovery import find_target
from sdcompile.core.zoo.model_step import ModelRequest, first_forward
from sdcompile.phases.integrate.results import IntegrateReport, Layer
from sdcompile.phases.pair_scope import holds_pair, recorded_pair
from sdcompile.phases.records import Evidence, record_phase
from sdcompile.phases.scaffold.facts import pair_facts
from sdcompile.testing.model_runs import ModelCompile, compile_and_compare, left_out_note, op_graph_targets
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE
from sdcompile.util.errors import BadInput
from sdcompile.util.input_checks import reading
from sdcompile.workspace.store import Workspace


@holds_pair(recorded_pair)
def run_integrate(eager: Path | None, compiled: Path | None, *, op: str | None = None, log: Path | None = None,
                  done_marker: str | None = None, step: int | None = None, catalog_file: Path | None = None,
                  model: str | None = None, model_file: str | None = None, dtype: str = "bf16",
                  repo: Path | None = None, plain_cpu: bool = False, min_cosine: float | None = None,
                  session: tuple[str, ...] = (), rank: int | None = None, progress=lambda _: None,
                  timeout: float | None = None, build=None, record_as: tuple[str, str] | None = None,
                  workdir: Path | None = None, evidence: Evidence | None = None) -> IntegrateReport:
    """Layers 1 and 3 come from `log` when given, else from compiling `model` / `model_file` (whose build and each
    forward may take `timeout` seconds: None, $SDCOMPILE_TIMEOUT, else 600; 0: no limit). `evidence(report)` writes
    the caller's reports of it (an HTML page) and returns their paths; with `record_as` (model, op) the verdict and
    that evidence are recorded in the pair of `workdir`'s workspace, under the pair's lock from start to record."""
    fused_by_model = record_as is not None and _fused_by_model(workdir, *record_as)
    report = _integrate(eager, compiled, op, log, done_marker, step, catalog_file, model, model_file, dtype, repo,
                        plain_cpu, min_cosine, session, rank, progress, timeout, build, fused_by_model)
    written = list(evidence(report)) if evidence is not None else []
    if record_as is not None:
        record_phase(workdir, *record_as, "integrate", report, written)
    return report


def _fused_by_model(workdir: Path | None, model: str, op: str) -> bool:
    """The pair's scaffold record says the model calls the op's fused kernel itself at every site."""
    facts = pair_facts(Workspace(workdir), model, op)
    return facts is not None and facts.fused_by_model


def _integrate(eager, compiled, op, log, done_marker, step, catalog_file, model, model_file, dtype, repo, plain_cpu,
               min_cosine, session, rank, progress, timeout, build, fused_by_model=False) -> IntegrateReport:
    if (eager is None) != (compiled is None):
        raise BadInput("integrate needs both profiles, EAGER and COMPILE, or neither",
                       "pass the eager run's profile folder and the compiled run's")
    with reading(catalog_file, "--catalog"):
        catalog = load_catalog(catalog_file)
    fused_op = catalog.resolve_op(op) if op else None
    with reading(log, "--log"):
        compile_log = read_log(log, done_marker) if log else None
    run = None
    if compile_log is None and (model or model_file or (build is not None and (build.capture or build.config))):
        run = _run_model(model, model_file, dtype, repo, plain_cpu, fused_op, min_cosine, progress, timeout, build)

    layers = [_layer1_model(run, fused_op) if run else _layer1(compile_log)]
    diff = op_check = eager_p = compiled_p = None
    notes: tuple[str, ...] = ()
    if eager is not None and compiled is not None:
        eager_p = load_profile(eager, catalog, step, session=session, rank=rank, what="EAGER")
        compiled_p = load_profile(compiled, catalog, step, session=session, rank=rank, what="COMPILE")
        diff = kernel_diff(eager_p, compiled_p)
        op_check = check_op(fused_op, eager_p, compiled_p, fused_by_model) if fused_op else None
        notes = comparability_notes(eager_p, compiled_p)
        layers.append(_layer2(diff, op_check))
    else:
        layers.append(Layer(2, "kernel diff", "skipped", "no profiles given",
                            "pass EAGER and COMPILE profiles (sdcompile profile captures them anywhere)"))
    layers.append(_layer3_model(run) if run else _layer3(compile_log))
    if run is not None:
        notes += tuple(left_out_note(x) for x in run.left_out)
    if fused_op and compile_log and compile_log.hits.total:
        notes += (f"the log's replacement count covers every enabled pattern, not only {fused_op.title}: layer 2 "
                  "tells whether this op's fused kernel really appeared",)
    verdicts = [layer.verdict for layer in layers]
    verdict = "fail" if "fail" in verdicts else ("pass" if all(v == "pass" for v in verdicts) else "incomplete")
    device = run.device if run else (compiled_p.device if compiled_p else "n/a")
    return IntegrateReport(
        op=fused_op.name if fused_op else None, device=device, verdict=verdict, layers=tuple(layers),
        eager=summarize(eager_p) if eager_p else None, compiled=summarize(compiled_p) if compiled_p else None,
        diff=diff, op_check=op_check, log=compile_log, model_compile=run, catalog=catalog.sources, notes=notes,
        versions=collect_versions(_tree(repo) if run else None),
    )


def _tree(repo):
    return find_target(repo)


def _run_model(model, model_file, dtype, repo, plain_cpu, fused_op, min_cosine, progress,
               timeout: float | None = None, build=None) -> ModelCompile:

    request = ModelRequest(model, model_file, build, dtype, timeout)
    cosine = DEFAULT_MIN_COSINE if min_cosine is None else min_cosine
    if not 0.0 < cosine <= 1.0:
        raise BadInput(f"--min-cosine {cosine} is outside (0, 1]", "use e.g. 0.999")
    find_target(repo)  # no tree: say so before building anything
    activate_for_command(plain_cpu)
    progress(f"building {request.spec.name} ({dtype}) and running one forward")
    built, _output = first_forward(request)
    return compile_and_compare(built, repo, fused_op, cosine, progress)


def _layer1_model(run: ModelCompile, op) -> Layer:
    evidence = f"compiled {run.model} through {run.target} ({len(run.groups)} pattern groups, {run.device})"
    if run.left_out:
        evidence += f"; left out, failing on this model: {', '.join(x.group for x in run.left_out)}"
    by_pattern = ", ".join(f"{k} {v}" for k, v in sorted(run.hits_by_pattern.items())) or "none"
    detail = f"{run.replacements} replacement(s) over {len(run.pass_log_counts)} compiled graph(s); by pattern: " \
             f"{by_pattern}"
    if run.error and not run.pass_log_counts:
        return Layer(1, "pattern hits", "fail", evidence,
                     f"the compile failed before the pattern pass completed: {run.error}")
    if op is None:
        return Layer(1, "pattern hits", "pass" if run.replacements > 0 else "fail", evidence, detail)
    fused = ", ".join(f"{k} {v}" for k, v in sorted(run.fused_nodes.items())) or "none"
    detail += f"; fused nodes after the pattern pass: {fused}"
    if run.final_fused_nodes != run.fused_nodes:
        final = ", ".join(f"{k} {v}" for k, v in sorted(run.final_fused_nodes.items())) or "none"
        detail += f"; in the graph that runs (after freeze() and the after-freezing rewrites): {final}"
    broken = _count_contract(run, op)
    if broken:
        return Layer(1, "pattern hits", "fail", evidence, f"{op.title}: {broken}; {detail}")
    if run.op_fused_nodes:
        return Layer(1, "pattern hits", "pass", evidence, f"{op.title}: {run.op_fused_nodes} fused node(s); {detail}")
    if run.op_final_nodes:
        return Layer(1, "pattern hits", "pass", evidence,
                     f"{op.title}: {run.op_final_nodes} fused node(s), put in after freeze() (a custom graph pass in "
                     f"graph_rewrite_after_freezing); {detail}")
    return Layer(1, "pattern hits", "fail", evidence,
                 f"{op.title}: no fused {'/'.join(op.fused_types)} node in the graph that runs — the model's "
                 f"{op.title} was not replaced (run `sdcompile debug`); {detail}")


def _count_contract(run: ModelCompile, op) -> str:
    """The recipe's check_fusion_hit: each fused call of the op launches its kernel at run time. "" when it holds; a
    call that launched none fell back to the eager chain inside the op (its NPU branch's own fallback)."""

    targets = {t.replace(".", "::", 1) for t in op_graph_targets(op)}
    short = [(name, run.fused_calls[name], n) for name, n in sorted(run.fell_back.items()) if name in targets]
    return "; ".join(f"count contract broken: {calls - n} of {calls} call(s) of {name} per step launched its kernel, "
                     f"{n} fell back to eager at run time" for name, calls, n in short)


def _layer3_model(run: ModelCompile) -> Layer:
    evidence = f"ran {run.model} compiled and eager ({run.dtype}, {run.device})"
    if run.error:
        return Layer(3, "regression", "fail", evidence, f"the compiled model failed: {run.error}")
    detail = f"cosine {run.cosine:.6f} (min {run.min_cosine}), max |compiled - eager| {run.max_abs:.3g}"
    return Layer(3, "regression", "pass" if run.numerics_passed else "fail", evidence, detail)


def _layer1(log: CompileLog | None) -> Layer:
    if log is None:
        return Layer(1, "pattern hits", "skipped", "no compile log given",
                     "pass --log with the compiled run's log (MINDIE_LOG_LEVEL=debug)")
    hits = log.hits
    if hits.lines == 0:
        return Layer(1, "pattern hits", "unconfirmed", log.path,
                     "no 'PatternMatchPass replace N patterns.' line: the run did not log at DEBUG level "
                     "(set MINDIE_LOG_LEVEL=debug) or never compiled")
    per_graph = ", ".join(str(n) for n in hits.per_graph[:12]) + (" ..." if len(hits.per_graph) > 12 else "")
    detail = f"{hits.total} replacement(s) over {hits.lines} compiled graph(s) [{per_graph}]"
    return Layer(1, "pattern hits", "pass" if hits.total > 0 else "fail", log.path, detail)


def _layer2(diff: KernelDiff, op_check: OpCheck | None) -> Layer:
    summary = (f"{len(diff.eager_only)} eager-only kernel name(s), {len(diff.compile_only)} compile-only; kernel "
               f"time {diff.eager_us:,.1f} -> {diff.compile_us:,.1f} us")
    if op_check is None:
        return Layer(2, "kernel diff", "unconfirmed", "profiles",
                     summary + "; pass --op to check a fused kernel appeared and its eager chain went away")
    return Layer(2, "kernel diff", op_check.verdict, "profiles", f"{op_check.title}: {op_check.reason}; {summary}")


def _layer3(log: CompileLog | None) -> Layer:
    if log is None:
        return Layer(3, "regression", "skipped", "no compile log given",
                     "pass --log with the compiled full-model run's log, and --done-marker for its last line")
    outcome = log.outcome
    if outcome.failure:
        return Layer(3, "regression", "fail", log.path, f"the run failed: {outcome.failure}")
    if outcome.marker and outcome.marker_line:
        return Layer(3, "regression", "pass", log.path, f"completion marker found at {outcome.marker_line}")
    if outcome.marker:
        return Layer(3, "regression", "fail", log.path,
                     f"no failure in the log, but the completion marker {outcome.marker!r} never appears")
    return Layer(3, "regression", "unconfirmed", log.path,
                 "no traceback or error in the log, but nothing confirms the run finished: pass --done-marker REGEX "
                 "matching the run's last line")
