"""The path per implementation: phase 1's decision read from the workspace's analysis.json (analyze runs first
when it is missing or was made for another dtype or device), then --path applied to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sdcompile.phases.choices import TABLE_PATHS, Carrier
from sdcompile.phases.scaffold.results import PathChoice, Why
from sdcompile.util.reasons import Reason
from sdcompile.workspace.artifacts import ArtifactError, read_artifact


def phase1_decisions(path: Path, made_for: dict[str, str], run_analyze: Callable[[], object]) -> tuple[dict, bool]:
    """implementation name -> phase 1's decision (dict) from the analysis record at `path`, and whether analyze ran
    first: `run_analyze` writes that record when it is missing, unreadable or was not made for `made_for` (its
    dtype, device and build)."""

    doc = None
    if path.is_file():
        try:
            doc = read_artifact("analysis", path)
        except ArtifactError:  # cut short, or written by another sdcompile: phase 1 is a cache, so analyze runs again
            doc = None
    ran_first = doc is None or any(doc.get(key) != value for key, value in made_for.items())
    if ran_first:
        run_analyze()
        doc = read_artifact("analysis", path)
    return {impl["name"]: impl["decision"] for impl in doc["analysis"]["implementations"]}, ran_first


def choose_path(requested: str, implementation: str, decision: dict | None) -> PathChoice:
    """`requested` is --path (choices.SCAFFOLD_PATHS); `decision` phase 1's, None when it did not report the
    implementation. auto never chooses a custom graph pass: only --path graph-pass asks for one."""
    if decision is None:
        chosen = Carrier(requested) if requested in TABLE_PATHS else Carrier.REPLACEMENT
        return PathChoice(implementation, "unknown", "unknown", requested, chosen,
                          Reason.of(Why.PATH_UNREPORTED, chosen=chosen))
    phase1 = Carrier(decision["path"])
    chosen = phase1 if requested == "auto" else Carrier(requested)
    return PathChoice(implementation, decision["parameter_source"], phase1, requested, chosen,
                      Reason.of(Why.PATH_PHASE1, requested=requested, agreed=chosen == phase1, phase1=decision))
