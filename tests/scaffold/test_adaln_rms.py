"""AdaLN after an RMSNorm: the modulation `rms_norm(x) * (1 + scale) + shift` is the adaln_rms form, replaced by
MindIE-SD's scale_shift (mindiesd::adaln computes a LayerNorm). Its chain starts at the multiply by 1 + scale; scale
and shift are taken as they meet the + 1 and the product and expanded to x's shape (the kernel reads them flat).
Each shape on a hand-written block (tests/scaffold/data/adaln_rms_forms.py) and on the diffusers models it comes
from, on either torch.

A pattern over the modulation alone would match it after any norm, and MindIE-SD registers patterns without an
extra_check; where this run's LayerNorm chains need a GraphPatternEntry (torch 2.12 and later), the fusion's one
carrier holds the RMSNorm chains too, and their entry checks that x is no LayerNorm's output."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scaffold_helpers import passed_count, run_generated_tests

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.scaffold.render import reason_text
from sdcompile.phases.scaffold.results import Why

DATA = Path(__file__).parent / "data" / "adaln_rms_forms.py"
ENTRIES_ONLY = holds("decomposition-override")  # LayerNorm chains need a GraphPatternEntry on this torch

# form -> (the chain's roles, in the fused call's order; whether scale and shift are materialised to x's size)
FORMS = {
    "table": (["x", "scale", "shift"], True),
    "per_token": (["x", "scale", "shift"], False),
    "viewed": (["x", "scale"], True),
    "plus_one": (["x", "scale"], True),
}


def _fused_call(variant) -> str:
    """The function or op a variant's replacement calls (its last line, after any setup)."""
    return variant.replacement.split("; ")[-1].split("(")[0].strip()


def _scaffold(form, target, ws, **kw):
    from sdcompile.phases.scaffold.phase import scaffold

    return scaffold(model_file=f"{DATA}:{form}", name=f"rms_{form}", op="adaln", dtype="fp32", repo=target,
                    workdir=ws, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("form", list(FORMS))
def test_each_shape_is_a_scale_shift_pattern_binding_its_roles_by_what_they_do(form, target, tmp_path):
    result = _scaffold(form, target, tmp_path / "ws", dry_run=True)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    roles, materialised = FORMS[form]
    (v,) = result.variants
    assert v.path == "replacement"  # no LayerNorm here: a pattern holds every chain
    assert [i.role for i in v.inputs] == roles
    assert _fused_call(v) == "mindiesd.layers.scale_shift.scale_shift"
    assert ".expand_as(x), " in v.replacement
    assert v.replacement.endswith("shift.expand_as(x))" if "shift" in roles else "torch.zeros_like(x).expand_as(x))")
    assert result.numerics and all(n.passed for n in result.numerics)
    assert [r.site for r in result.sites] == ["blocks.0.modulation", "blocks.1.modulation"]
    # the + 1 is the chain's own, wherever the model computes it; the RMSNorm is not (it is --op rmsnorm's)
    assert v.chain[0].startswith("add = torch.ops.aten.add.Tensor(scale, 1")
    assert not any("rsqrt" in line for line in v.chain)
    costs = [n for n in result.notes if n.code == Why.MATERIALISED]
    assert bool(costs) == materialised, result.notes
    for note in costs:  # the roles the fused op reads at x's size, worded as the note says it
        assert note.facts["like"] == "x" and "become tensors of x's size before each call" in reason_text(note)


@pytest.mark.slow
def test_scale_only_after_a_precomputed_plus_one_passes_its_generated_tests(target, tmp_path, cli):
    """Z-Image's shape, written, registered and run: the generated test checks the unit numerics against the
    search function and that the tiny model's sites are replaced by scale_shift with its numerics."""
    ws = tmp_path / "ws"
    result = _scaffold("plus_one", target, ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    registered = cli("register", "--model", "rms_plus_one", "--op", "adaln", "--repo", str(target),
                     "--workdir", str(ws))
    assert registered.exit_code == 0, registered.stderr
    test_file = "tests/compilation/patterns/test_rms_plus_one_adaln_pattern.py"
    written = (target / test_file).read_text()
    assert '"RmsPlusOneAdaLnPattern": "mindiesd.scale_shift.default"' in written
    proc = run_generated_tests(target, test_file)
    assert proc.returncode == 0 and passed_count(proc.stdout) == 2, proc.stdout[-3000:]


@pytest.mark.slow
def test_a_block_with_both_norms_gives_each_chain_its_own_fused_op(target, tmp_path):
    """One scaffold run, two forms: the LayerNorm chain is mindiesd::adaln's, the RMSNorm one scale_shift's. Where
    the LayerNorm chain needs a GraphPatternEntry, the RMSNorm one goes there too (one fusion, one carrier; a pattern
    would take the LayerNorm's modulation first), and its entry checks x's producer before it fuses a chain as
    scale_shift."""
    # --force: below torch 2.12 the target's own AdaLayerNormPatternGroup covers the LayerNorm chain
    result = _scaffold("mixed", target, tmp_path / "ws", dry_run=True, force=True)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    by_op = {_fused_call(v): v for v in result.variants}
    expected_path = "graph-entry" if ENTRIES_ONLY else "replacement"
    assert {v.path for v in result.variants} == {expected_path}, [(v.name, v.path) for v in result.variants]
    if ENTRIES_ONLY:
        assert set(by_op) == {"mindiesd.adaln.default", "mindiesd.scale_shift.default"}
        source = next(f.diff for f in result.files if f.kind == "graph entries")
        assert "not_from=((\"x\", ('aten.native_layer_norm.default', 'aten.layer_norm.default')),)" in source
        assert "from ...layers import scale_shift as _defines_scale_shift" in source
    else:
        assert set(by_op) == {"mindiesd.layernorm_scale_shift", "mindiesd.layers.scale_shift.scale_shift"}
        # the group tries the LayerNorm pattern first at a node: it holds its norm, the other only the modulation
        order = [v.name for v in result.variants]
        assert order.index(by_op["mindiesd.layernorm_scale_shift"].name) < order.index(
            by_op["mindiesd.layers.scale_shift.scale_shift"].name)


@pytest.mark.slow
@pytest.mark.skipif(not ENTRIES_ONLY, reason="LayerNorm chains take a GraphPatternEntry only from torch 2.12")
def test_the_mixed_entries_replace_each_chain_with_its_own_op_in_the_model(target, tmp_path, cli):
    ws = tmp_path / "ws"
    result = _scaffold("mixed", target, ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    registered = cli("register", "--model", "rms_mixed", "--op", "adaln", "--repo", str(target), "--workdir", str(ws))
    assert registered.exit_code == 0, registered.stderr
    test_file = "tests/compilation/patterns/test_rms_mixed_adaln_pattern.py"
    proc = run_generated_tests(target, test_file)
    assert proc.returncode == 0 and passed_count(proc.stdout) >= 1, proc.stdout[-3000:]
    written = ast.parse((target / "mindiesd/compilation/patterns/rms_mixed_adaln_pattern.py").read_text())
    chains = {n.name for n in ast.walk(written) if isinstance(n, ast.FunctionDef) and n.name.startswith("create")}
    assert len(chains) == 2


@pytest.mark.slow
@pytest.mark.parametrize("model", ["zimage", "ltx"])
def test_the_diffusers_models_rms_modulations_are_generated(model, target, tmp_path):
    """Z-Image's blocks (1 + scale a line before the multiply, no shift) and LTX's (scale and shift from its
    scale_shift_table): every site of theirs gets scale_shift; each model's LayerNorm site (the final layer, norm_out)
    gets mindiesd::adaln."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model=model, op="adaln", repo=target, workdir=tmp_path / "ws", dry_run=True)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    ops = {_fused_call(v) for v in result.variants}
    assert ops & {"mindiesd.layers.scale_shift.scale_shift", "mindiesd.scale_shift.default"}, ops
    assert not [r for r in result.sites if r.need == "cannot generate"]
    why = {p.implementation: p.why.code for p in result.paths}
    blocks = {"zimage": "transformer_z_image.ZImageTransformerBlock.forward (inline)",
              "ltx": "transformer_ltx.LTXVideoTransformerBlock.forward (inline)"}[model]
    if ENTRIES_ONLY:  # the final LayerNorm chain needs an entry: the blocks' chains join it in the one carrier
        assert {v.path for v in result.variants} == {"graph-entry"}
        assert why[blocks] == Why.ONE_CARRIER, why
    else:
        assert why[blocks] == Why.PATH_PHASE1, why


@pytest.mark.slow
def test_a_call_of_a_modulating_class_that_ran_no_modulation_is_not_a_site(target, tmp_path):
    """Mochi's MochiModulatedRMSNorm modulates at norm3 (its caller passes 1 + scale) and gates at norm2 and norm4
    (tanh(gate)): the recorded forward saw a modulation at the first only, so the others are not AdaLN sites."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="mochi", op="adaln", repo=target, workdir=tmp_path / "ws", dry_run=True)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    rows = {r.site: r for r in result.sites}
    for site in ("transformer_blocks.0.norm2", "transformer_blocks.0.norm4"):
        assert rows[site].need == "not a site" and rows[site].reason.code == Why.UNMODULATED, rows[site]
    assert rows["transformer_blocks.0.norm3"].need in ("replacement", "graph-entry")
