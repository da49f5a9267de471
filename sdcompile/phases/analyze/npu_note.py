"""The NPU note: where diffusers itself calls a torch_npu fused op in an implementation, and at which sites this
run took that branch."""

from __future__ import annotations

from sdcompile.core.zoo.primitives import npu_branches
from sdcompile.phases.analyze.results import NpuNote


def npu_sites(loc, trace) -> set[str]:
    """The sites where the implementation's own code called a torch_npu op in the recorded forward."""
    codes = set(loc.codes)
    return {c.site for c in trace.calls if c.op.startswith("npu") and c.frame.code in codes}


def npu_note(loc, extract, taken: set[str], device) -> NpuNote | None:
    """None when the implementation's source calls no fused op of the catalog (catalogs/npu_branches.toml)."""

    if extract is None:
        return None
    catalog = npu_branches()
    fused = tuple(sorted(set(catalog.call.findall(extract.text))))
    if not fused:
        return None
    gate = next((g for g in catalog.gates if g in extract.text), "")
    condition = next((line.strip() for line in extract.text.splitlines() if gate and gate in line), "")
    skipped = tuple(s.path for s in loc.sites if s.path not in taken)
    return NpuNote(fused, gate, condition, len(taken), len(loc.sites), skipped, catalog.gate_meaning,
                   device.model_sees_npu, device.label)
