"""What debug writes: `<stage>.<model>.txt` dumps, pattern and after-pass graphs, metadata.json, debug.json,
and the phase-5 record."""

from __future__ import annotations

from pathlib import Path

from sdcompile.core.graph.dump import stage_header
from sdcompile.phases.debug.results import DebugResult
from sdcompile.phases.pair_scope import writing_pair
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.workspace.artifacts import read_artifact, write_artifact


# ------------------------------------------------------------------------------------------------ writing
def write_dumps(folder: Path, subjects, built, groups, selected, after_pass_texts, stage_name) -> list[Path]:
    with writing_pair(folder.parent if built is not None else None):
        return _write_dumps(folder, subjects, built, groups, selected, after_pass_texts, stage_name)


def _write_dumps(folder: Path, subjects, built, groups, selected, after_pass_texts, stage_name) -> list[Path]:
    written: list[Path] = []
    for subject in subjects:
        if subject.unit_of is not None:
            continue
        cap = subject.capture
        for stage in cap.metadata.stages:
            parts = [stage_header(cap, sg) + "\n" + sg.text for sg in cap.stage(stage)]
            path = folder / f"{stage}.{subject.name}.txt"
            atomic_write_text(path, "\n\n".join(parts))
            written.append(path)
    for key, text in after_pass_texts.items():
        group, index = key.rsplit(".", 1)
        name = f"after_patterns.{built.name}.{group}.txt" if index == "0" else \
            f"after_patterns.{built.name}.{group}.graph{index}.txt"
        path = folder / name
        atomic_write_text(path, f"# {stage_name} after {group}'s patterns (the target's PatternMatchPass on a copy)\n"
                          + text)
        written.append(path)
    for g in groups:
        for p in g.patterns:
            if p.error:
                continue
            path = folder / f"pattern.{p.name}.txt"
            atomic_write_text(path, (
                f"# {p.name} ({g.group}, {p.source_file})\n# traced with {p.traced_with}\n"
                f"# same PatternExpr as the registered entry: {p.same_as_registered}\n\n"
                f"## as registered (PatternPrettyPrinter)\n{p.printed}\n\n## the search graph\n{p.graph}\n"))
            written.append(path)
    meta = {
        "model": built.name if built else "unit",
        "stage": stage_name,
        "torch": _version("torch"), "diffusers": _version("diffusers"),
        "groups": [{"group": g.group, "flag": g.flag, "unit_hits": g.unit_hits, "model_hits": g.model_hits,
                    "model_by_pattern": g.model_by_pattern, "unit_by_pattern": g.unit_by_pattern,
                    "model_hits_before_freezing": g.model_hits_before_freezing} for g in groups],
    }
    if subjects:
        from dataclasses import asdict

        meta["capture"] = asdict(subjects[0].capture.metadata)
    path = folder / "metadata.json"
    write_artifact("metadata", path, meta)
    written.append(path)
    return written


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def write_result(ws, result: DebugResult, folder: Path, built, op: str) -> None:
    with writing_pair(folder.parent if built is not None else None):
        _write_result(ws, result, folder, built, op)


def _write_result(ws, result: DebugResult, folder: Path, built, op: str) -> None:
    path = folder / "debug.json"
    write_artifact("debug", path, result)
    meta_path = folder / "metadata.json"
    meta = read_artifact("metadata", meta_path)
    meta.update(device=result.device, device_mode=result.device_mode, target=result.target,
                target_version=result.target_version, target_package=result.target_package, python=result.python,
                verdict="pass" if result.passed else "fail", summary=result.summary)
    write_artifact("metadata", meta_path, meta)
    if built is not None:
        ws.record(built.name, op, "debug", "pass" if result.passed else "fail", result.summary, device=result.device,
                  evidence=[path, meta_path])
