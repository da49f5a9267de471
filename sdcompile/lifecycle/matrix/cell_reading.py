"""A cell read from what its command returned: `sdcompile run`'s result and the records its phases name as evidence
(scaffold's decision, verify's kernel checks, integrate's compile), or `scaffold --dry-run`'s result."""

from __future__ import annotations

import os
from pathlib import Path

from sdcompile.core.npu.kernel_check import KernelVerdict
from sdcompile.lifecycle.matrix.outcomes import OutcomeRow, row_of
from sdcompile.lifecycle.matrix.results import PASSING, Cell, Outcome
from sdcompile.lifecycle.results import RunResult
from sdcompile.phases.choices import Decision
from sdcompile.phases.scaffold.facts import ScaffoldFacts, pair_facts
from sdcompile.phases.scaffold.results import ScaffoldResult
from sdcompile.workspace.artifacts import ArtifactError, read_artifact
from sdcompile.workspace.store import Workspace

# scaffold's decision -> the outcome of a run that passed every gate
_PASSED = {Decision.REUSE: Outcome.REUSED, Decision.GENERATE: Outcome.GENERATED,
           Decision.ALREADY_FUSED: Outcome.ALREADY_FUSED}
# a generated file's kind (scaffold's PlannedFile.kind) -> the carrier it holds
_CARRIERS = (("graph entries", "graph entry"), ("pattern", "pattern group"))
_FAILED_KERNEL = (KernelVerdict.RAISES, KernelVerdict.DIFFERS)


def read_cell(result: RunResult, root: Path, op: str, model: str, torch_version: str, seconds: float,
              exit_code: int) -> Cell:
    """The cell of a run's `result`, from it and the records its phases name as evidence."""
    ws = Path(result.workspace)
    evidence = {Path(e).name: ws / e for p in result.phases for e in p.evidence}
    facts = pair_facts(Workspace(ws), Path(result.pair_folder).parent.name, op)
    decision = facts.decision if facts else ""
    integrate = _record(evidence.get("integrate.json"), "integrate") or {}
    compiled = integrate.get("model_compile") or {}
    check = integrate.get("op_check") or {}
    steps = len((integrate.get("compiled") or {}).get("steps") or ()) or 1
    figures = dict(fused_nodes=compiled.get("op_final_nodes"), cosine=compiled.get("cosine"),
                   fused_launches=check["fused_compile"] / steps if "fused_compile" in check else None)
    report = os.path.relpath(result.report, root) if result.report else ""
    common = dict(seconds=seconds, exit_code=exit_code, report=report, **figures)
    if result.passed and decision in _PASSED:
        outcome = _PASSED[decision]
        return make_cell(model, op, torch_version, outcome, carrier=_carrier(facts, outcome), **common)
    if result.passed:  # every gate passed, yet scaffold's record says nothing this table can name
        return make_cell(model, op, torch_version, Outcome.FAILS, phase="scaffold", why="the run passed but its "
                         f"scaffold record is unreadable or says {decision!r}", **common)
    phase, why = result.stopped_at or "", result.stop_reason or ""
    analysis = (_record(evidence.get("analysis.json"), "analysis") or {}).get("analysis") or {}
    if decision == Decision.NOTHING_LOCATED or (phase == "analyze" and analysis.get("site_count") == 0):
        outcome = Outcome.NO_SITE
    elif _kernel_fails(evidence.get("verify.json")):
        outcome = Outcome.NPU_KERNEL
    else:
        outcome = Outcome.DEAD_END if result.dead_end else Outcome.FAILS
    return make_cell(model, op, torch_version, outcome, phase=phase, why=why, **common)


def _carrier(facts: ScaffoldFacts | None, outcome: Outcome) -> str:
    if facts is None:
        return ""
    if outcome is Outcome.REUSED:
        return ", ".join(facts.covering)
    if outcome is not Outcome.GENERATED:
        return ""
    if facts.graph_pass_class:
        return "graph pass"
    return next((name for kind, name in _CARRIERS if any(kind in k for k in facts.kinds)), "")


def _kernel_fails(verify: Path | None) -> bool:
    """verify judged a fused call of the op's own group on the NPU's kernel, and it raised or differed."""
    record = _record(verify, "verify") or {}
    return any((k.get("check") or {}).get("verdict") in _FAILED_KERNEL and k.get("pattern")
               for k in record.get("kernels", ()))


def _record(path: Path | None, kind: str) -> dict | None:
    if path is None:
        return None
    try:
        return read_artifact(kind, path)
    except (FileNotFoundError, ArtifactError):
        return None


def scaffold_cell(result: ScaffoldResult, op: str, model: str, torch_version: str, seconds: float,
                  exit_code: int) -> Cell:
    """The cell of a `scaffold --dry-run` result: reused / generated (passing its gate) / no site / dead end."""
    row = row_of(model, result)
    if result.decision == Decision.GENERATE and result.gate == "pass":
        outcome = Outcome.GENERATED
    else:
        outcome = {Decision.REUSE: Outcome.REUSED, Decision.ALREADY_FUSED: Outcome.ALREADY_FUSED,
                   Decision.NOTHING_LOCATED: Outcome.NO_SITE,
                   Decision.CANNOT_GENERATE: Outcome.DEAD_END}.get(result.decision, Outcome.FAILS)
    stopped = outcome not in PASSING
    why = ("; ".join(row.refusals) or row.decision) if stopped else ""
    return make_cell(model, op, torch_version, outcome, carrier=", ".join(row.carriers),
                     phase="scaffold" if stopped else "", why=why, seconds=seconds, exit_code=exit_code, scaffold=row)


def make_cell(model: str, op: str, torch_version: str, outcome: Outcome, *, carrier: str = "", phase: str = "",
              why: str = "", fused_nodes: int | None = None, fused_launches: float | None = None,
              cosine: float | None = None, seconds: float = 0.0, report: str = "", exit_code: int = 0,
              scaffold: OutcomeRow | None = None) -> Cell:
    return Cell(model, op, torch_version, outcome, carrier, phase, why, fused_nodes, fused_launches, cosine,
                round(seconds, 1), report, exit_code, scaffold)
