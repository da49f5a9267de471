"""`sdcompile integrate` (phase 6): three layers, in order, each with a verdict.

  1 pattern hits   from the compile log's "PatternMatchPass replace N patterns." lines
  2 kernel diff    eager vs compile profiles: eager-only / compile-only kernels, same-name deltas by impact,
                   and for --op whether its fused kernel appears and its eager chain disappears
  3 regression     the compiled full-model run completed (from the log)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sdcompile.errors import BadInput
from sdcompile.profiles.catalog import load_catalog
from sdcompile.profiles.compile_log import CompileLog, read_log
from sdcompile.profiles.diff import KernelDiff, OpCheck, check_op, kernel_diff
from sdcompile.profiles.profile import ProfileSummary, comparability_notes, load_profile, summarize


@dataclass(frozen=True)
class Layer:
    number: int
    name: str
    verdict: str  # "pass", "fail", "unconfirmed" (evidence inconclusive) or "skipped" (no evidence given)
    evidence: str  # where the verdict comes from
    detail: str


@dataclass(frozen=True)
class IntegrateReport:
    op: str | None
    device: str  # where the compared runs ran: "npu", "cpu (emulated npu)", "cpu", or "n/a" without profiles
    verdict: str  # "pass" (all three layers pass), "fail" (any layer fails), "incomplete" (none failed, not all ran)
    layers: tuple[Layer, ...]
    eager: ProfileSummary | None
    compiled: ProfileSummary | None
    diff: KernelDiff | None
    op_check: OpCheck | None
    log: CompileLog | None
    catalog: tuple[str, ...]
    notes: tuple[str, ...]


def run_integrate(eager: Path | None, compiled: Path | None, *, op: str | None = None, log: Path | None = None,
                  done_marker: str | None = None, step: int | None = None,
                  catalog_file: Path | None = None) -> IntegrateReport:
    if (eager is None) != (compiled is None):
        raise BadInput("integrate needs both profiles, EAGER and COMPILE, or neither",
                       "pass the eager run's profile folder and the compiled run's")
    catalog = load_catalog(catalog_file)
    fused_op = catalog.resolve_op(op) if op else None
    compile_log = read_log(log, done_marker) if log else None

    layers = [_layer1(compile_log)]
    diff = op_check = eager_p = compiled_p = None
    notes: tuple[str, ...] = ()
    if eager is not None and compiled is not None:
        eager_p = load_profile(eager, catalog, step)
        compiled_p = load_profile(compiled, catalog, step)
        diff = kernel_diff(eager_p, compiled_p)
        op_check = check_op(fused_op, eager_p, compiled_p) if fused_op else None
        notes = comparability_notes(eager_p, compiled_p)
        layers.append(_layer2(diff, op_check))
    else:
        layers.append(Layer(2, "kernel diff", "skipped", "no profiles given",
                            "pass EAGER and COMPILE profiles (sdcompile profile captures them anywhere)"))
    layers.append(_layer3(compile_log))
    if fused_op and compile_log and compile_log.hits.total:
        notes += (f"the log's replacement count covers every enabled pattern, not only {fused_op.title}: layer 2 "
                  "tells whether this op's fused kernel really appeared",)
    verdicts = [layer.verdict for layer in layers]
    verdict = "fail" if "fail" in verdicts else ("pass" if all(v == "pass" for v in verdicts) else "incomplete")
    device = compiled_p.device if compiled_p else "n/a"
    return IntegrateReport(
        op=fused_op.name if fused_op else None, device=device, verdict=verdict, layers=tuple(layers),
        eager=summarize(eager_p) if eager_p else None, compiled=summarize(compiled_p) if compiled_p else None,
        diff=diff, op_check=op_check, log=compile_log, catalog=catalog.sources, notes=notes,
    )


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
