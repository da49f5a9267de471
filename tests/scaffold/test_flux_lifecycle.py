"""Tiny Flux's RMSNorm on a fresh MindIE-SD 3.1.0 tree, through phases 2-4: scaffold reports reuse with evidence,
--force writes a pattern generated from the graph, register/verify/the generated test accept it, --undo restores.

One scenario per test function: its steps depend on each other, and each step compiles real models."""

from __future__ import annotations

import json

import pytest
from scaffold_helpers import REGISTRATION_FILES, git, lint, passed_count, py_compile, run_generated_tests

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.scaffold.results import VariantConstant, Why

FLUX_RMSNORM_SITES = {
    "single_transformer_blocks.0.attn.norm_k", "single_transformer_blocks.0.attn.norm_q",
    "transformer_blocks.0.attn.norm_added_k", "transformer_blocks.0.attn.norm_added_q",
    "transformer_blocks.0.attn.norm_k", "transformer_blocks.0.attn.norm_q",
}
PATTERN = "mindiesd/compilation/patterns/flux_rmsnorm_pattern.py"
# torch >= 2.12 registers patterns decomposed (its casts as prims.convert_element_type): only WanRmsNorm, which
# leaves the two casts outside, replaces Flux's RMSNorm; before 2.12 RMSNormPatternGroup, registered first,
# replaces the whole chain, and WanRmsNorm would too.
DECOMPOSITION_OVERRIDE = holds("decomposition-override")
if DECOMPOSITION_OVERRIDE:
    COVERED_BY, COVERED_NODES, LEFT = "WanRmsNormPatternGroup: WanRmsNormPattern-torch.bfloat16", (6, 8), (
        "aten._to_copy.default x2",)
    ALONE = {"WanRmsNormPatternGroup": "replaced"}
else:
    COVERED_BY, COVERED_NODES, LEFT = "RMSNormPatternGroup: RMSNormPattern-torch.bfloat16", (8, 8), ()
    ALONE = {"RMSNormPatternGroup": "replaced", "WanRmsNormPatternGroup": "replaced"}
PATTERN_TEST = "tests/compilation/patterns/test_flux_rmsnorm_pattern.py"


def _rendered(result) -> str:
    from rich.console import Console

    from sdcompile.phases.scaffold.render import render_scaffold

    console = Console(record=True, width=240)
    render_scaffold(console, result)
    return console.export_text()


@pytest.mark.slow
def test_flux_rmsnorm_reuse_then_generated_pattern_through_register_verify_and_its_own_test(target, tmp_path):
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target
    from sdcompile.phases.register.phase import check_registration, register
    from sdcompile.phases.scaffold.phase import scaffold
    from sdcompile.phases.verify.phase import run_verify
    from sdcompile.util.serialize import dumps
    from sdcompile.workspace.store import Workspace

    ws = tmp_path / "ws"
    originals = {f: (target / f).read_bytes() for f in REGISTRATION_FILES}

    # 1. reuse: the target's WanRmsNormPatternGroup already replaces every RMSNorm site of tiny Flux
    reuse = scaffold(model="flux", op="rmsnorm", repo=target, workdir=ws)
    assert reuse.decision == "reuse" and reuse.gate == "pass"
    assert {r.site for r in reuse.sites} == FLUX_RMSNORM_SITES
    for row in reuse.sites:
        assert row.need == "covered"
        assert row.production.status == "replaced"
        assert row.production.by == (COVERED_BY,)
        # evidence, per site: how many of its 8 nodes were replaced, and what was left around the fused op
        assert (row.production.replaced, row.production.nodes) == COVERED_NODES
        assert row.production.left == LEFT
        alone = {g.group: g.status for g in row.groups}
        assert alone == ALONE, "the groups that replace Flux's RMSNorm on their own"
    assert reuse.files == () and not (target / PATTERN).exists()
    state = Workspace(ws).load_pair("flux", "rmsnorm")
    assert state.phases["scaffold"].verdict == "info"
    assert json.loads(dumps(reuse))["decision"] == "reuse"
    shown = _rendered(reuse)
    assert "scaffold flux rmsnorm: reuse" in shown and "transformer_blocks.0.attn.norm_added_q" in shown
    assert COVERED_BY.split(": ")[1] in shown
    assert ("left: aten._to_copy.default x2" in shown) is DECOMPOSITION_OVERRIDE

    # 2. --dry-run --force: the files as diffs, nothing written, nothing recorded
    dry = scaffold(model="flux", op="rmsnorm", repo=target, workdir=ws, force=True, dry_run=True)
    assert [(f.path, f.status) for f in dry.files] == [(PATTERN, "would create"), (PATTERN_TEST, "would create")]
    assert all(f.diff.startswith("--- /dev/null\n+++ b/") for f in dry.files)
    assert not (target / PATTERN).exists() and not (target / PATTERN_TEST).exists()
    shown = _rendered(dry)
    assert "dry run: nothing written" in shown and "+FluxRmsNormPatternGroup = [" in shown

    # 3. --force: written from the graph and checked on every site before writing
    made = scaffold(model="flux", op="rmsnorm", repo=target, workdir=ws, force=True)
    assert made.decision == "generate" and made.gate == "pass" and made.written
    assert [f.status for f in made.files] == ["created", "created"]
    assert {r.site for r in made.sites if r.check and r.check.hit} == FLUX_RMSNORM_SITES
    [variant] = made.variants
    assert variant.entries == ("create(torch.bfloat16, epsilon=1e-06)",)
    assert variant.constants == (VariantConstant("epsilon", 9.999999974752427e-07, "1e-06", fp32_rounded=True),)
    if DECOMPOSITION_OVERRIDE:  # registration turns aten._to_copy into prims: the casts stay outside the pattern
        assert variant.trimmed == ("aten._to_copy.default on the output", "aten._to_copy.default on an input")
        (finding,) = [n for n in made.notes if n.code == Why.REGISTRATION_FINDING]
        assert "prims.convert_element_type.default" in finding.facts["gained"], finding
        replacement = "torch_npu.npu_rms_norm(x, weight.to(x.dtype), epsilon=_epsilon)[0]"
    else:  # registered as written: the whole chain, casts included, becomes the fused op
        assert variant.trimmed == () and not any(n.code == Why.REGISTRATION_FINDING for n in made.notes)
        replacement = "torch_npu.npu_rms_norm(x, weight, epsilon=_epsilon)[0]"
    text = (target / PATTERN).read_text()
    assert text.startswith("# Generated by `sdcompile scaffold --model flux --op rmsnorm --dtype bf16`")
    for line in ("torch.ops.aten.mean.dim(pow_, [3], True)", "torch.ops.aten.add.Scalar(mean, _epsilon)",
                 "_epsilon = torch.tensor(epsilon, dtype=torch.float32).item()",
                 "return __class__.__name__ + f\"-{dtype}\"", 'device="meta"',
                 replacement,
                 "FluxRmsNormPatternGroup = [", "torch/nn/modules/normalization.py"):
        assert line in text, line
    files = [target / PATTERN, target / PATTERN_TEST]
    assert lint(*files).returncode == 0, lint(*files).stdout
    assert py_compile(*files).returncode == 0
    assert Workspace(ws).load_pair("flux", "rmsnorm").phases["scaffold"].verdict == "pass"

    # 4. register twice: exactly the three edits, then nothing; the audit passes
    first = register(target, "flux", "rmsnorm", workdir=ws)
    second = register(target, "flux", "rmsnorm", workdir=ws)
    assert first.outcome == "registered" and second.outcome == "already registered"
    assert all(not f.changed for f in second.files)
    changed = set(git(target, "diff", "--name-only").split())
    assert changed == set(REGISTRATION_FILES)
    assert check_registration(target).passed

    # 5. the generated test file, run by pytest through the emulation plugin: 6 unit sites + the model
    proc = run_generated_tests(target, PATTERN_TEST)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert passed_count(proc.stdout) == len(FLUX_RMSNORM_SITES) + 2, proc.stdout[-2000:]  # + model, numerics

    # 6. verify: the generated group hits every RMSNorm site of tiny Flux, numerics passing (the target is reloaded:
    # this process imported it before the registration edits)
    load_target(find_target(target), reload=True)
    report = run_verify(repo=target, workdir=ws, model="flux", op="rmsnorm")
    [group] = report.groups
    assert group.group == "FluxRmsNormPatternGroup" and group.passed
    assert {s.module_path for s in group.model.sites} == FLUX_RMSNORM_SITES
    assert group.model.numerics.passed

    # 7. --undo restores the three files byte for byte
    register(target, "flux", "rmsnorm", undo=True, workdir=ws)
    assert {f: (target / f).read_bytes() for f in REGISTRATION_FILES} == originals
