"""The path per implementation: phase 1's decision read from the workspace's analysis.json (analyze runs first
when it is missing or was made for another dtype or device), then --path applied to it."""

from __future__ import annotations

from sdcompile.phases.choices import TABLE_PATHS, Carrier
from sdcompile.phases.scaffold.results import PathChoice, Why
from sdcompile.util.reasons import Reason
from sdcompile.workspace.artifacts import ArtifactError, read_artifact


def phase1_decisions(ws, spec, model, model_file, op, dtype, device, plain_cpu, workdir, say,
                     timeout: float | None = None) -> tuple[dict, str, bool]:
    """implementation name -> phase 1's decision (dict), where it came from, and whether analyze ran first (with
    scaffold's `timeout`: it had not run for this dtype, device and build)."""

    path = ws.pair_dir(spec.name, op, create=False) / "analysis.json"
    doc = None
    if path.is_file():
        try:
            doc = read_artifact("analysis", path)
        except ArtifactError:  # cut short, or written by another sdcompile: phase 1 is a cache, so analyze runs again
            doc = None
    built_so = spec.build.fingerprint()
    if doc is None or doc.get("dtype") != dtype or doc.get("device") != device.label or doc.get("build") != built_so:
        from sdcompile.phases.analyze.phase import analyze

        say(f"phase 1 (analyze {spec.name} --op {op}, {dtype}) has not run for this device and build: running it")
        analyze(model, model_file, op, dtype, plain_cpu, workdir, timeout=timeout, build=spec.build)
        doc = read_artifact("analysis", path)
        ran_first = True
    else:
        ran_first = False
    decisions = {impl["name"]: impl["decision"] for impl in doc["analysis"]["implementations"]}
    return decisions, ws.relative(path), ran_first


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
