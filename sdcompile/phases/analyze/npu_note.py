"""The NPU note: where diffusers itself calls a torch_npu fused op in an implementation, and at which sites this
run took that branch."""

from __future__ import annotations

from sdcompile.phases.analyze import render
from sdcompile.phases.analyze.results import NpuNote


def npu_sites(loc, trace) -> set[str]:
    """The sites where the implementation's own code called a torch_npu op in the recorded forward."""
    codes = set(loc.codes)
    return {c.site for c in trace.calls if c.op.startswith("npu") and c.frame.code in codes}


def npu_note(loc, extract, taken: set[str], device) -> NpuNote | None:
    """None when the implementation's source calls no fused op of the catalog (catalogs/primitives.toml)."""
    from sdcompile.core.zoo.primitives import npu_branches

    if extract is None:
        return None
    catalog = npu_branches()
    fused = tuple(sorted(set(catalog.call.findall(extract.text))))
    if not fused:
        return None
    gate = next((g for g in catalog.gates if g in extract.text), "")
    condition = next((line.strip() for line in extract.text.splitlines() if gate and gate in line), "")
    total = len(loc.sites)
    skipped = [s.path for s in loc.sites if s.path not in taken]
    text = render.npu_note_text(fused, condition, catalog.gate_meaning, device.label, device.model_sees_npu,
                                len(taken), total, skipped)
    return NpuNote(fused, gate, condition, len(taken), total, text)
