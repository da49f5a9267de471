"""AdaLN in each shape diffusers uses: roles told by what each input does (x is normalised, scale multiplies the
normalised x, shift is added to the product, a norm's own weight and bias are its arguments 2 and 3), optional
roles (no shift, no affine) standing in as the fused call's neutral values, and the fused op's shape rules
deciding what a GraphPatternEntry's handler may insert. Each shape on a hand-written block
(tests/scaffold/data/adaln_forms.py).

Which carrier runs depends on the torch: below 2.12 a register_replacement pattern calling
mindiesd.layernorm_scale_shift; from 2.12 registration decomposes native_layer_norm, so only a GraphPatternEntry
inserting mindiesd::adaln itself can match, and that op takes [B, D] or [B, 1, D] modulation only."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
from scaffold_helpers import passed_count, run_generated_tests

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.scaffold.render import reason_text
from sdcompile.phases.scaffold.results import Why

DATA = Path(__file__).parent / "data" / "adaln_forms.py"
DOCS = Path(__file__).parents[2] / "docs"
ENTRIES_ONLY = holds("decomposition-override")
PATH = "graph-entry" if ENTRIES_ONLY else "replacement"

# form -> the chain's inputs in the fused call's order (the roles it has)
FORMS = {
    "per_batch": ["x", "scale", "shift"],
    "per_batch_3d": ["x", "scale", "shift"],
    "per_token": ["x", "scale", "shift"],
    "scale_only": ["x", "scale"],
    "affine": ["x", "scale", "shift", "weight", "bias"],
}


def _scaffold(form, target, ws, **kw):
    from sdcompile.phases.scaffold.phase import scaffold

    # --force: on some torches the target's own groups already cover a shape; the generated one is tested anyway
    return scaffold(model_file=f"{DATA}:{form}", name=f"ad_{form}", op="adaln", dtype="fp32", repo=target,
                    workdir=ws, path=PATH, force=True, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("form", list(FORMS))
def test_each_shape_binds_its_roles_by_what_they_do(form, target, tmp_path):
    result = _scaffold(form, target, tmp_path / "ws", dry_run=True)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    if ENTRIES_ONLY and form == "per_token":
        # [B, S, D] modulation: the op itself broadcasts [B, D] and [B, 1, D] only, so the carrier makes each token
        # a row of its own around it, as layernorm_scale_shift (path A) does inside
        (v,) = result.variants
        assert "mindiesd.adaln.default(x.flatten(0, -2).unsqueeze(1), scale.flatten(0, -2)" in v.replacement
        assert v.replacement.endswith(".reshape(x.shape)"), v.replacement
    (v,) = result.variants
    assert [i.role for i in v.inputs] == FORMS[form]
    assert result.numerics and all(n.passed for n in result.numerics)
    if PATH == "replacement":
        assert "mindiesd.layernorm_scale_shift(layernorm=layer_norm, x=x, scale=scale" in v.replacement
        assert ("weight=weight, bias=bias" in v.replacement) == (form == "affine")
        assert ("shift=torch.zeros_like(scale)" in v.replacement) == (form == "scale_only")


@pytest.mark.slow
@pytest.mark.parametrize("form", ["affine", "scale_only"])
def test_generated_files_pass_their_own_tests(form, target, tmp_path, cli):
    """The two shapes the optional roles exist for, written, registered and run (a pattern group, or from torch
    2.12 a GraphPatternEntry carrier: register wires either)."""
    ws = tmp_path / "ws"
    result = _scaffold(form, target, ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    registered = cli("register", "--model", f"ad_{form}", "--op", "adaln", "--repo", str(target), "--workdir", str(ws))
    assert registered.exit_code == 0, registered.stderr
    test_file = f"tests/compilation/patterns/test_ad_{form}_adaln_pattern.py"
    proc = run_generated_tests(target, test_file)
    # a group's test: the replacement against its search function, and the model; a carrier's: the model
    expected = 2 if PATH == "replacement" else 1
    assert proc.returncode == 0 and passed_count(proc.stdout) == expected, proc.stdout[-3000:]
    (v,) = result.variants
    if PATH == "replacement" and form == "affine":  # the guide's example is this very replacement
        guide = " ".join((DOCS / "pattern-templates.md").read_text().split())
        for line in v.replacement.split("; "):
            assert " ".join(line.split()) in guide, line
    if PATH == "graph-entry" and form == "scale_only":  # graph-pattern-entry.md shows this chain's fuse
        written = ast.parse((target / "mindiesd/compilation/patterns/ad_scale_only_adaln_pattern.py").read_text())
        fuse = next(n for n in ast.walk(written) if isinstance(n, ast.FunctionDef) and n.name == "fuse")
        shown = _python_blocks(DOCS / "graph-pattern-entry.md")
        shown_fuse = next(n for b in shown for n in ast.walk(b) if isinstance(n, ast.FunctionDef) and n.name == "fuse")
        assert [ast.dump(n) for n in shown_fuse.body] == [ast.dump(n) for n in fuse.body[:len(shown_fuse.body)]]


@pytest.mark.slow
def test_a_generated_carrier_fuses_only_inputs_of_the_shapes_its_op_takes(target, tmp_path):
    """A chain's ops do not pin shapes down: the entry generated from [B, 1, D] sites would match per-token
    [B, S, D] modulation too, which mindiesd::adaln itself does not broadcast. The generated SHAPES check says no."""
    from types import SimpleNamespace

    import torch

    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{DATA}:per_batch_3d", name="ad_b1d", op="adaln", dtype="fp32", repo=target,
                      workdir=tmp_path / "ws", path="graph-entry", force=True)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    source = (target / "mindiesd/compilation/patterns/ad_b1d_adaln_pattern.py").read_text()
    tree = ast.parse(source)
    keep = [n for n in tree.body if (isinstance(n, ast.Assign) and n.targets[0].id == "SHAPES")
            or (isinstance(n, ast.FunctionDef) and n.name == "_shapes_fit")]
    namespace: dict = {}
    exec(compile(ast.Module(keep, []), "entries", "exec"), namespace)  # noqa: S102 - the generated file's own code

    def node(*shape):
        return SimpleNamespace(meta={"val": torch.empty(shape)})

    fits = namespace["_shapes_fit"]
    assert fits({"x": node(2, 6, 32), "scale": node(2, 1, 32), "shift": node(2, 1, 32)})
    assert fits({"x": node(2, 6, 32), "scale": node(2, 32), "shift": node(2, 32)})
    assert not fits({"x": node(2, 6, 32), "scale": node(2, 6, 32), "shift": node(2, 6, 32)})  # per token
    assert not fits({"x": node(2, 6, 32), "scale": node(3, 1, 32), "shift": node(3, 1, 32)})  # another batch


@pytest.mark.slow
def test_inline_modulations_after_their_own_norm_modules_are_one_site_each(target, tmp_path):
    """A block writing two modulations inline, each after a separate LayerNorm module: the inline site is split
    per chain, and each chain is extended up to the norm that produced its input."""
    result = _scaffold("inline", target, tmp_path / "ws", dry_run=True)
    assert [r.site for r in result.sites] == ["blocks.0#1", "blocks.0#2", "blocks.1#1", "blocks.1#2"]
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    (v,) = result.variants  # the four chains are one pattern
    assert v.chain[0].startswith("native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [32]")
    assert all(r.check is not None and r.check.hit for r in result.sites)


@pytest.mark.slow
def test_the_cast_a_block_hands_its_norm_is_no_chain_of_its_own(target, tmp_path):
    """Kandinsky 5: `norm(x.float())` where x is the output of the norm before the block. The cast reaches back to
    that norm through its getitem, but computes nothing of the op: it is part of the first chain's input, not a
    third site nothing can be generated for."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{DATA}:casting_inline", name="ad_cast", op="adaln", dtype="bf16", repo=target,
                      workdir=tmp_path / "ws", path=PATH, force=True, dry_run=True)
    assert [r.site for r in result.sites] == ["blocks.0#1", "blocks.0#2", "blocks.1#1", "blocks.1#2"]
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason


@pytest.mark.slow
def test_a_norm_modulated_twice_gets_no_pattern_and_entries_computing_it_per_chain(target, tmp_path, cli):
    """SD3.5's AdaLayerNormZeroX: one LayerNorm, two modulations. A pattern standing for one chain would leave the
    norm's value behind for the other (mismatch type 5), so the pattern path refuses and says why; --path auto takes
    a GraphPatternEntry carrier (the shared norm a MULTIPLE node), whose fused calls each compute the norm again,
    and the generated test (numerics on the two-block model) passes once registered."""
    from sdcompile.phases.scaffold.phase import scaffold

    kw = dict(model_file=f"{DATA}:shared_norm", name="ad_shared", op="adaln", dtype="fp32", repo=target, force=True)
    if not ENTRIES_ONLY:
        refused = scaffold(workdir=tmp_path / "ws-a", path="replacement", dry_run=True, **kw)
        assert refused.decision == "cannot generate" and len(refused.sites) == 4
        for row in refused.sites:
            assert row.reason.code == Why.SHARED_START, row.reason
            assert "read by another chain too" in reason_text(row.reason)
    ws = tmp_path / "ws"
    result = scaffold(workdir=ws, path="auto", **kw)
    assert [r.site for r in result.sites] == ["blocks.0.norm1#1", "blocks.0.norm1#2", "blocks.1.norm1#1",
                                              "blocks.1.norm1#2"]
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    assert [p.path for p in result.paths] == ["graph-entry"]
    assert all(r.check is not None and r.check.hit for r in result.sites)
    assert result.numerics and all(n.passed for n in result.numerics)
    written = (target / "mindiesd/compilation/patterns/ad_shared_adaln_pattern.py").read_text()
    assert "shared=frozenset({0, 1})" in written  # the LayerNorm and its value: read by the other chain too
    registered = cli("register", "--model", "ad_shared", "--op", "adaln", "--repo", str(target), "--workdir", str(ws))
    assert registered.exit_code == 0, registered.stderr
    proc = run_generated_tests(target, "tests/compilation/patterns/test_ad_shared_adaln_pattern.py")
    assert proc.returncode == 0 and passed_count(proc.stdout) >= 1, proc.stdout[-3000:]


@pytest.mark.slow
def test_classes_that_only_produce_the_modulation_are_not_sites(target, tmp_path):
    """Sana's AdaLayerNormSingle computes shift/scale/gate from the timestep; the blocks apply them."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="sana", op="adaln", repo=target, workdir=tmp_path / "ws", dry_run=True, path=PATH)
    (producer,) = [r for r in result.sites if r.implementation == "normalization.AdaLayerNormSingle"]
    assert producer.need == "not a site" and producer.reason.code == Why.PRODUCER_ONLY
    assert producer.generated is None and producer.check is None
    assert "normalization.AdaLayerNormSingle" not in [p.implementation for p in result.paths]  # no chain, no path
    counted = result.decision_reason.facts["counts"]
    assert sum(counted.values()) == len(result.sites) - 1, counted  # every site but the producer


def _python_blocks(page: Path) -> list[ast.Module]:
    """Every ```python block of a guide, parsed (indented blocks inside list items too)."""
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", page.read_text(), flags=re.S | re.M)
    return [ast.parse(textwrap.dedent(body)) for _indent, body in blocks]
