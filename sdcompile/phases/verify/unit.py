"""Verify's unit level, per pattern of a group: a module whose forward is the pattern's own search function, run
on its own example inputs (materialised from the meta device) and compiled through the target's MindieSDBackend —
the self-consistency test. Evidence, vLLM-style: the replacement count (inductor's counter and the pass's own
"PatternMatchPass replace N patterns." line), the fused op present and the original ops gone in the graph after
the pass, numerics against eager; when the pattern replaces nothing, where it and the graph part (diagnosis)."""

from __future__ import annotations

from pathlib import Path

from sdcompile.core.graph.pattern_graph import call_for, record_registrations
from sdcompile.core.target.failures import describe_error
from sdcompile.phases.verify.diagnosis import credit_siblings, diagnose
from sdcompile.phases.verify.evidence import folder_name, write_evidence
from sdcompile.phases.verify.fused_ops import replacement_fused_ops, replacement_targets
from sdcompile.phases.verify.numerics_difference import explain
from sdcompile.phases.verify.results import DataMoved, Divergence, UnitCase
from sdcompile.phases.verify.timing import time_on_npu
from sdcompile.testing.backend import GraphCheck, check_graph
from sdcompile.testing.data_movement import measure
from sdcompile.testing.numerics import approximation_atol, compare, example_inputs


class _SearchFunctionModule:
    """Builds `forward = the pattern's search function` as an nn.Module (upstream's unit tests are the same)."""

    @staticmethod
    def build(fn):
        import torch

        class SearchFunction(torch.nn.Module):
            def forward(self, *args):
                return fn(*args)

        return SearchFunction()


def run_unit_case(target, group, pattern_cls, min_cosine: float, evidence_dir: Path | None) -> UnitCase:
    """One pattern of `group` against a module whose forward is its own search function."""
    import torch

    device = target.device
    name = pattern_cls.name()
    try:
        inputs, specs = example_inputs(pattern_cls)
    except Exception as exc:  # noqa: BLE001 - a broken inputs() is this pattern's failure
        return UnitCase(name, (), 0, (), 0, {}, None, None, None, None,
                        f"inputs() failed: {describe_error(exc, target.tree.root)}", False)
    inputs = [t.to(device.tensor_device) if isinstance(t, torch.Tensor) else t for t in inputs]
    module = _SearchFunctionModule.build(pattern_cls.pattern).to(device.tensor_device)
    evidence: list[str] = []
    with torch.no_grad(), target.session([group.group]) as session:
        error = None
        compiled_out = None
        calls: list = []
        try:
            with record_registrations() as calls:  # what register_replacement was given, for the diagnosis
                session.activate()
            compiled = torch.compile(module, backend=session.backend(), dynamic=False)
            compiled_out = compiled(*inputs)
        except Exception as exc:  # noqa: BLE001 - a pattern may throw inside the matcher: the group's failure
            error = describe_error(exc, target.tree.root)
        if name in session.registration_errors:
            error = f"registration failed: {session.registration_errors[name]}"
        registered = [p for p in session.registered_patterns() if p.name == name]
        eager_out = module(*inputs)
        fused_ops = replacement_fused_ops(pattern_cls, inputs)
        numerics = (compare(compiled_out, eager_out, min_cosine, inputs, approximation_atol(fused_ops))
                    if compiled_out is not None else None)
        capture = session.graphs[-1] if session.graphs else None
        graph_check = _graph_check(capture, pattern_cls, inputs, fused_ops)
        replacements = session.replacements
        log_counts = tuple(session.pass_log_counts)
        by_pattern = dict(session.hits_by_pattern)
        own_hits = by_pattern.get(name, 0)
        divergence = None
        if error is None and own_hits == 0:
            divergence = _divergence(target, group.group, pattern_cls, calls, session)
        difference = None
        if error is None and own_hits and numerics is not None and not numerics.passed:
            difference = explain(pattern_cls, inputs, min_cosine, approximation_atol(fused_ops), target.tree.root)
        timing = None if error else time_on_npu(device, lambda: module(*inputs), lambda: compiled(*inputs))
        kernels = tuple(session.kernel_sites)
        moved = _moved(pattern_cls, inputs) if error is None else None
        if evidence_dir is not None:
            evidence += _keep_evidence(evidence_dir / "unit" / folder_name(name), capture, registered)
    passed = (error is None and replacements >= 1 and numerics is not None and numerics.passed
              and graph_check is not None and graph_check.passed and all(k.correct for k in kernels))
    return UnitCase(name, specs, replacements, log_counts, own_hits, by_pattern, graph_check, numerics, divergence,
                    timing, error, passed, tuple(evidence), difference, kernels, moved)


def _moved(pattern_cls, inputs) -> DataMoved | None:
    """What one call of the search function and of the replacement move on the unit's inputs (None when the
    replacement cannot run eagerly here: its failure is reported by the compile above)."""
    try:
        _out, chain = measure(pattern_cls.pattern, *inputs)
        _out, replacement = measure(pattern_cls.replacement, *inputs)
    except Exception:  # noqa: BLE001 - an estimate, never a verdict
        return None
    return DataMoved(chain.moved, replacement.moved, max(replacement.materialised - chain.materialised, 0))


def _graph_check(capture, pattern_cls, inputs, expected: tuple[str, ...]) -> GraphCheck | None:
    """The graph after the pass against the one before it (None when the pass did not run). The module is the
    search function, so every op of its graph that the replacement does not itself contain must be gone."""
    if capture is None or capture.after is None:
        return None
    return check_graph(capture.before.op_counts(), capture.after.op_counts(), expected,
                       replacement_ops=replacement_targets(pattern_cls, inputs))


def _divergence(target, group: str, pattern_cls, calls: list, session) -> Divergence | None:
    """Why the pattern replaced nothing, when the pass ran and the registration was recorded (else None)."""

    name = pattern_cls.name()
    entries = session.pattern_entries().get(name, [])
    capture = session.graphs[-1] if session.graphs else None
    call = call_for(pattern_cls, calls)
    if capture is None or not entries or call is None:
        return None
    # Judged on the graph as the pass received it (a sibling pattern may have rewritten the one returned).
    divergence = diagnose(target, group, name, call, entries[0], capture, len(session.graphs) - 1,
                          session.replacements)
    return credit_siblings(divergence, name, dict(session.hits_by_pattern))


def _keep_evidence(folder: Path, capture, registered: list) -> list[str]:
    """The graph before and after the pass, and the pattern as registered, as files in `folder`."""
    kept = []
    if capture is not None:
        kept.append(str(write_evidence(folder / "aot.pattern_match_pass.before.txt", capture.before.code)))
        if capture.after is not None:
            kept.append(str(write_evidence(folder / "aot.pattern_match_pass.after.txt", capture.after.code)))
    if registered:
        text = "\n\n".join(f"# registered pattern {i}: {p.name}\n{p.printed}" for i, p in enumerate(registered))
        kept.append(str(write_evidence(folder / "registered_pattern.txt", text + "\n")))
    return kept
