"""What analyze writes to the workspace: each implementation's source snippet and subgraphs file, the pair's
analysis.json, and the phase 1 record of each model/op pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdcompile.core.zoo.source import render_snippet
from sdcompile.phases.analyze import render
from sdcompile.phases.analyze.results import AnalyzeResult
from sdcompile.phases.analyze.subgraph_text import subgraphs_text
from sdcompile.phases.pair_scope import writing_pair
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.util.serialize import to_jsonable
from sdcompile.workspace.artifacts import write_artifact
from sdcompile.workspace.store import safe_name


def _slug(name: str) -> str:
    return safe_name(name.replace(" (inline)", ".inline").replace("<locals>", "locals"))


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text if text.endswith("\n") else text + "\n")


def write_snippets(loc, extract, per_site, capture, label: str, ws, pair: Path) -> tuple[str | None, str]:
    """Write the implementation's source snippet (when its source was found) and its subgraphs file into the
    pair's snippets folder; returns their workspace-relative paths."""

    slug = _slug(loc.display_name)
    snippet = None
    if extract is not None:
        versions = f"diffusers {capture.metadata.diffusers_version}, torch {capture.metadata.torch_version}"
        path = pair / "snippets" / f"{slug}.py"
        _write(path, render_snippet(loc, extract, versions, label))
        snippet = ws.relative(path)
    path = pair / "snippets" / f"{slug}.aten.txt"
    _write(path, subgraphs_text(loc, per_site, capture))
    return snippet, ws.relative(path)


def prune_snippets(folder: Path, impls) -> None:
    """Drop snippet files an earlier analyze wrote for implementations this run no longer finds."""
    if not folder.is_dir():
        return
    keep = {Path(p).name for i in impls for p in (i.snippet, i.subgraphs) if p}
    for path in folder.iterdir():
        if path.is_file() and path.name not in keep:
            path.unlink()


def write_and_record(result: AnalyzeResult, ws, graphs_dir: Path) -> None:
    """analysis.json per model/op pair (the run's head with that op's report), and phase 1 recorded for it."""

    head: dict[str, Any] = {k: v for k, v in to_jsonable(result).items() if k not in ("ops",)}
    before = graphs_dir / "graph0.before_freezing.txt"
    for report in result.ops:
        if report.analysis is None:
            continue
        pair = ws.pair_dir(result.model, report.op)
        with writing_pair(pair):
            _write_pair(result, report, ws, pair, head, before)


def _write_pair(result: AnalyzeResult, report, ws, pair: Path, head: dict[str, Any], before: Path) -> None:
    doc = {**head, "op": report.op, "analysis": to_jsonable(report)}
    write_artifact("analysis", pair / "analysis.json", doc)
    if not report.present:
        ws.record(result.model, report.op, "analyze", "fail", render.record_summary(report),
                  device=result.device, evidence=[pair / "analysis.json"])
        return
    evidence = [pair / "analysis.json"] + ([before] if before.is_file() else [])
    evidence += [ws.root / p for i in report.implementations for p in (i.snippet, i.subgraphs) if p]
    ws.record(result.model, report.op, "analyze", "pass", render.record_summary(report),
              device=result.device, evidence=evidence)
