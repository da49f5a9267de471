"""The report verify keeps in the workspace: verify.json and verify.md, and phase 4 recorded for the pair."""

from __future__ import annotations

from pathlib import Path

from sdcompile.phases.verify.evidence import write_evidence
from sdcompile.phases.verify.render import markdown_report, skipped_text
from sdcompile.phases.verify.results import VerifyReport
from sdcompile.workspace.artifacts import write_artifact


def write_report(ws, report: VerifyReport, report_dir: Path) -> None:
    """Write verify.json and verify.md into `report_dir`; with a model/op pair, record the phase's verdict."""

    json_path = write_artifact("verify", report_dir / "verify.json", report)
    md_path = write_evidence(report_dir / "verify.md", markdown_report(report))
    if report.pair:
        model, op = report.pair
        verdict = "skipped" if report.skipped else "pass" if report.passed else "fail"
        tested = report.graph_pass
        summary = (skipped_text(report) if report.skipped else f"{tested.test_file}: {tested.last_line}"
                   if tested is not None else "; ".join(g.summary for g in report.groups))
        evidence = [json_path, md_path, *([Path(tested.log)] if tested is not None else [])]
        ws.record(model, op, "verify", verdict, summary[:500], device=report.device, evidence=evidence)
