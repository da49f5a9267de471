"""Phase 2 recorded for the pair: scaffold.json, the generated sources and the backend edit kept in the
workspace as evidence."""

from __future__ import annotations

from pathlib import Path

from sdcompile.phases.choices import Decision
from sdcompile.phases.scaffold import render
from sdcompile.phases.scaffold.results import ScaffoldResult
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.workspace.artifacts import write_artifact


def record(result: ScaffoldResult, ws, planned, backend_diff: str) -> ScaffoldResult:
    """Record phase 2 for the pair, with the result, the generated sources and the backend edit as evidence."""
    from dataclasses import replace

    folder = ws.pair_dir(result.model, result.op) / "scaffold"
    result = replace(result, workspace=str(folder))
    evidence = [folder / "scaffold.json"]
    for stale in (folder / "backend.diff",):
        stale.unlink(missing_ok=True)
    if backend_diff:
        atomic_write_text(folder / "backend.diff", backend_diff)
        evidence.append(folder / "backend.diff")
    for f in planned:
        copy = folder / "generated" / Path(f.relative).name
        atomic_write_text(copy, f.text)
        evidence.append(copy)
    write_artifact("scaffold", evidence[0], result)
    verdict = {Decision.REUSE: "info", Decision.ALREADY_FUSED: "info",
               Decision.GENERATE: "pass"}.get(result.decision, "fail")
    if result.gate == "fail":
        verdict = "fail"
    ws.record(result.model, result.op, "scaffold", verdict, render.record_summary(result)[:500],
              device=result.device, evidence=evidence)
    return result
