"""Verify's model level: the same group on a real model graph (phase 6 layer 1 in miniature), its replacements
and where they landed; a unit hit with zero model hits is mismatch type 7."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from sdcompile.core.npu.kernel_check import KernelVerdict
from sdcompile.core.target.failures import describe_error
from sdcompile.core.target.graph_snapshots import source_line
from sdcompile.core.zoo.model_step import ModelRequest, first_forward
from sdcompile.phases.verify.evidence import folder_name, write_evidence
from sdcompile.phases.verify.fused_ops import fused_targets
from sdcompile.phases.verify.results import ModelLevel, ModelSite
from sdcompile.phases.verify.timing import time_on_npu
from sdcompile.testing.numerics import approximation_atol, compare
from sdcompile.testing.reference import float32_forward, judged_against_reference, worth_a_reference
from sdcompile.workspace.artifacts import ArtifactError, read_artifact


def build_model(model: str | None, model_file: str | None, dtype: str | None, timeout: float | None = None,
                build=None):
    """The model through sdcompile's zoo, with the same options as `analyze`, and its first forward run (user code
    that raises is exit 2 naming it); returns zoo's BuiltModel."""

    return first_forward(ModelRequest(model, model_file, build, dtype or "bf16", timeout))[0]


def run_model_level(target, group, built, unit_hit: bool,
                    min_cosine: float, evidence_dir: Path | None, classify_type7: bool = True) -> ModelLevel:
    """`group` alone on the model `built` (a zoo BuiltModel): replacements, where they landed, numerics."""
    import torch

    device = target.device
    module = built.module.to(device.tensor_device)
    inputs = {k: v.to(device.tensor_device) if isinstance(v, torch.Tensor) else v for k, v in built.inputs.items()}
    evidence: list[str] = []
    with torch.no_grad(), target.session([group.group]) as session:
        error, compiled_out = None, None
        with built.forward_deadline("compiled forward"):  # outside the except: a hang is not the group's failure
            try:
                session.activate()
                compiled = torch.compile(module, backend=session.backend(), dynamic=False)
                compiled_out = compiled(**inputs)
            except Exception as exc:  # noqa: BLE001 - patterns can throw inside the matcher: the group's failure
                error = describe_error(exc, target.tree.root)
        with built.forward_deadline():
            eager_out = module(**inputs)
        fused_after = {op for c in session.graphs if c.after is not None for op in c.after.op_counts()}
        approximation = approximation_atol(fused_after & fused_targets())
        # tolerances of the model's compute dtype (its inputs), not of an output a final fp32 layer upcasts
        numerics = (compare(compiled_out, eager_out, min_cosine, inputs, approximation)
                    if compiled_out is not None else None)
        if worth_a_reference(numerics):  # a fused kernel rounding once, past eager's per-op roundings
            with built.forward_deadline("float32 forward"):
                reference = float32_forward(module, inputs)
            numerics = judged_against_reference(numerics, compiled_out, eager_out, reference)
        sites = [ModelSite(a.pattern, a.node, a.target, a.module_path, source_line(a.stack_trace))
                 for a in session.applications]
        fused_before = _fused_ops_before_pass(session.graphs)
        timing = None if error else time_on_npu(device, lambda: module(**inputs), lambda: compiled(**inputs), 5, 1)
        if evidence_dir is not None:
            evidence += _keep_evidence(evidence_dir / "model" / folder_name(built.name), session.graphs)
        replacements, log_counts, graphs = session.replacements, tuple(session.pass_log_counts), len(session.graphs)
        by_pattern = dict(session.hits_by_pattern)
        kernels = tuple(session.kernel_sites)
    error_source = None
    if error is not None and any(k.check.verdict is KernelVerdict.RAISES for k in kernels):
        error_source = "npu-kernel"  # the compiled model ran into the fused op's NPU kernel, judged per site below
    elif error is not None:
        baseline = _baseline_compile_error(target, module, inputs)
        error_source = "model" if baseline else "group"
        if baseline:
            error = f"{built.name} does not compile through MindieSDBackend even with no pattern group: {baseline}"
    mismatch, advice = None, None
    if error is None and replacements == 0 and unit_hit and classify_type7:
        mismatch = 7
        advice = (f"the pattern replaces its own search function but nothing in {built.name}: run "
                  f"`sdcompile debug {_model_option(built)} --group {group.group}` to see where the model graph and "
                  "the pattern part (parameters held as module attributes are the usual cause)")
    passed = (error is None and replacements >= 1 and numerics is not None and numerics.passed
              and all(k.correct for k in kernels))
    return ModelLevel(built.name, built.dtype_name, graphs, replacements, log_counts, by_pattern, tuple(sites),
                      fused_before, numerics, timing, error, error_source, mismatch, advice, passed,
                      tuple(evidence), kernels=kernels)


def _fused_ops_before_pass(graphs) -> dict[str, int]:
    """The fused ops the model's graphs already call before the pass (diffusers calls some itself on an NPU)."""
    fused = fused_targets()
    before: Counter = Counter()
    for capture in graphs:
        before.update({op: n for op, n in capture.before.op_counts().items() if op in fused})
    return dict(before)


def _keep_evidence(folder: Path, graphs) -> list[str]:
    """Each compiled graph before and after the pass, as files in `folder`."""
    kept = []
    for i, capture in enumerate(graphs):
        kept.append(str(write_evidence(folder / f"graph{i}.aot.pattern_match_pass.before.txt", capture.before.code)))
        if capture.after is not None:
            kept.append(str(write_evidence(folder / f"graph{i}.aot.pattern_match_pass.after.txt",
                                           capture.after.code)))
    return kept


def analyzed_sites(ws, model: str, op: str) -> tuple[str, ...]:
    """The submodule paths phase 1 (`sdcompile analyze`) found for this pair's op, from its analysis.json."""

    path = ws.pair_dir(model, op, create=False) / "analysis.json"
    if not path.is_file():
        return ()
    try:
        analysis = read_artifact("analysis", path).get("analysis") or {}
        return tuple(dict.fromkeys(site["path"] for impl in analysis.get("implementations", ())
                                   for site in impl.get("sites", ()) if site.get("path")))
    except (ValueError, AttributeError, TypeError, KeyError, ArtifactError):
        return ()  # an analysis.json of another shape or sdcompile is not this phase's to judge (as if missing)


def with_analyzed_sites(level: ModelLevel, ws, model: str, op: str) -> ModelLevel:
    """`level` with the sites phase 1 found for the pair, and those of them no replacement landed in."""
    found = analyzed_sites(ws, model, op)
    replaced = {site.module_path for site in level.sites}
    missing = tuple(p for p in found if not any(r == p or r.startswith(p + ".") for r in replaced))
    return dataclasses.replace(level, analyzed_sites=found, unreplaced_sites=missing)


def _model_option(built) -> str:
    spec = getattr(built, "spec", None)
    if spec is not None and getattr(spec, "kind", "") == "file":
        return f"--model-file {spec.path}:{spec.factory}"
    return f"--model {built.name}"


def _baseline_compile_error(target, module, inputs) -> str | None:
    """Whether the model compiles through the backend with no group enabled (None) or how it fails."""
    import torch

    with torch.no_grad(), target.session([]) as session:
        try:
            torch.compile(module, backend=session.backend(), dynamic=False)(**inputs)
        except Exception as exc:  # noqa: BLE001 - reported as the model's failure
            return describe_error(exc, target.tree.root)
    return None
