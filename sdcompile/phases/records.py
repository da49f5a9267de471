"""Recording integrate / copy-audit outcomes in the workspace: the report as JSON evidence plus the verdict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sdcompile.workspace.artifacts import write_artifact
from sdcompile.workspace.store import Workspace

_VERDICTS = {"pass": "pass", "fail": "fail"}  # "incomplete" / "info" are recorded as info


# A caller's reports of a phase's result (an HTML page), written when the phase has its result: their paths.
Evidence = Callable[[Any], Sequence[Path]]


def record_phase(workdir: Path | None, model: str, op: str, phase: str, report: Any, evidence: list[Path]) -> Path:
    ws = Workspace(workdir)
    artifact = ws.pair_dir(model, op) / f"{phase}.json"
    write_artifact(phase, artifact, report)  # integrate.json / copy-audit.json
    summary = _summary(phase, report)
    ws.record(model, op, phase, _VERDICTS.get(report.verdict, "info"), summary, device=report.device,
              evidence=[artifact, *evidence])
    return artifact


def _summary(phase: str, report: Any) -> str:
    if phase == "integrate":
        return "; ".join(f"layer {x.number} {x.name}: {x.verdict}" for x in report.layers)
    g = report.gate
    from sdcompile.core.profiles.copies import shown_ratio

    return (f"copy {g.metric} inflation {shown_ratio(g.value, g.undefined)}, compiled copy share "
            f"{report.compile_copies.share:.1%}; advice: {report.recommendation.choice}; gate: {g.verdict}")
