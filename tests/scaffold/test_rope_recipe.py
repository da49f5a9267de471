"""The RoPE recipe: roles told by data flow (x is negated and swapped, sin multiplies the rotated x, cos x as it
is), tables bound where they meet x, the rotation (halves or pairs) chosen by the numerics gate. Each form on a
hand-written module and on the diffusers model it comes from, as far as the installed torch lets a pattern match."""

from __future__ import annotations

from pathlib import Path

import pytest
from scaffold_helpers import passed_count, run_generated_tests

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.scaffold.results import Why

DATA = Path(__file__).parent / "data" / "rope_forms.py"
# torch >= 2.12 registers search functions through inductor's decompositions: aten.stack becomes aten.cat, so an
# interleaved chain (unbind/stack) can never match as a register_replacement pattern there.
STACK_REWRITTEN = holds("decomposition-override")
GUIDE = Path(__file__).parents[2] / "docs/pattern-templates.md"


def _register_and_pass_the_generated_test(cli, target, ws, passed: int = 2, *pytest_args: str) -> str:
    """register the generated group (or carrier), then its generated test passes: numerics and the model for a
    group, the model for a carrier (a RoPE function's site has no module of its own to test alone)."""
    registered = cli("register", "--model", "rf", "--op", "rope", "--repo", str(target), "--workdir", str(ws))
    assert registered.exit_code == 0, registered.stderr
    proc = run_generated_tests(target, "tests/compilation/patterns/test_rf_rope_pattern.py", *pytest_args)
    assert proc.returncode == 0 and passed_count(proc.stdout) == passed, proc.stdout[-3000:]
    return proc.stdout


def _in_the_guide(lines: list[str]) -> None:
    guide = " ".join(GUIDE.read_text(encoding="utf-8").split())
    for line in lines:
        assert " ".join(line.split()) in guide, line


@pytest.mark.slow
def test_rotate_half_roles_come_from_data_flow_and_the_generated_group_passes_its_test(target, tmp_path, cli):
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:rotate_half", name="rf", op="rope", dtype="fp32", repo=target, workdir=ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    assert [s.site for s in result.sites] == ["#1", "#2"]  # q and k: two calls, two chains, one pattern
    (v,) = result.variants
    # the function is rotate_half_rope(a=sin, b=x, c=cos): bound by what each does, not by name or position
    assert 'rotary_position_embedding(x, cos, sin, rotated_mode="rotated_half"' in v.replacement
    assert [i.role for i in v.inputs] == ["x", "cos", "sin"]
    assert all(n.passed for n in result.numerics)
    assert all(s.check is not None and s.check.hit for s in result.sites)

    _register_and_pass_the_generated_test(cli, target, ws)


@pytest.mark.slow
def test_interleaved_tables_are_bound_as_they_meet_x(target, tmp_path):
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{DATA}:interleaved", name="rf", op="rope", dtype="fp32", repo=target,
                      workdir=tmp_path / "ws", dry_run=True)
    if STACK_REWRITTEN:  # --path auto takes a GraphPatternEntry, written from the chain as the model computes it
        assert result.decision == "generate" and result.gate == "pass", result.decision_reason
        (choice,) = result.paths
        assert choice.path == "graph-entry" and "aten.stack.default" in _inner_op(choice.why)
        (v,) = result.variants
        assert v.after_groups == () and dict(v.bound).keys() == {"cos", "sin"}
        return
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    (v,) = result.variants
    assert dict(v.bound).keys() == {"cos", "sin"}  # the 2-D tables, unsqueezed to [1, S, 1, D] inside the chain
    assert 'rotated_mode="rotated_interleaved"' in v.replacement  # "rotated_half" was tried first and failed
    assert all(n.passed for n in result.numerics)


@pytest.mark.slow
def test_flux_rope_from_diffusers(target, tmp_path):
    """diffusers' apply_rotary_emb(use_real_unbind_dim=-1), the interleaved form; upstream's RopePatternGroup
    covers it where it matches, so --force asks for a generated one anyway."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="flux", op="rope", repo=target, workdir=tmp_path / "ws", dry_run=True, force=True)
    assert len(result.sites) == 4  # two attention modules, q and k each
    assert result.decision == "generate" and result.gate == "pass", (result.decision_reason, result.withheld,
                                                                      result.sites, result.numerics, result.errors)
    assert all(s.check is not None and s.check.hit for s in result.sites)
    if STACK_REWRITTEN:  # a GraphPatternEntry carrier
        (v,) = result.variants
        assert v.path == "graph-entry" and 'rotary_mode="interleave"' in v.replacement
        return
    (v,) = result.variants
    assert 'rotated_mode="rotated_interleaved"' in v.replacement
    _in_the_guide(v.replacement.split("; "))  # the guide's example is this very replacement


@pytest.mark.slow
def test_on_a_decomposing_torch_the_entries_run_ahead_of_the_residual_gate_group(target, tmp_path, cli):
    """torch >= 2.12: no pattern can hold an interleaved chain (stack), so the chain is a GraphPatternEntry, written
    once, as the model computes it. Its registration call runs before pattern_registry's groups, so the target's
    `x + y * gate` group (on by default, which otherwise takes the chain's tail) never sees it: with the target's
    groups as they ship, the carrier covers both sites. Its generated test passes on the model, and its chain table
    compares ops by name (a custom op defined again is a new OpOverload object for the same operator)."""
    from sdcompile.phases.scaffold.phase import scaffold

    if not STACK_REWRITTEN:
        pytest.skip("before torch 2.12 the pattern path holds this chain (test_interleaved_tables_are_bound_...)")
    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:interleaved", name="rf", op="rope", dtype="fp32", repo=target, workdir=ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    assert [r.production.groups for r in result.sites] == [("WanResidualGatePatternGroup",)] * 2  # before
    (v,) = result.variants
    assert v.path == "graph-entry" and not v.after_groups
    assert not any("residual_gate_add" in line for line in v.chain)
    # the tables as they meet x (bound at the chain's unsqueezes, which stay in the graph for the call to read)
    assert v.replacement.startswith("npu.npu_rotary_mul.default(x, unsqueeze_1, unsqueeze_3")
    assert 'rotary_mode="interleave"' in v.replacement  # "half" was tried first and failed the numerics gate
    assert all(n.passed for n in result.numerics) and len(result.numerics) == 1
    assert all(s.check is not None and s.check.hit for s in result.sites) and len(result.sites) == 2
    _register_and_pass_the_generated_test(cli, target, ws, 1)

    shipped = scaffold(model_file=f"{DATA}:interleaved", name="rf", op="rope", dtype="fp32", repo=target,
                       workdir=tmp_path / "ws2", dry_run=True)
    assert shipped.decision == "reuse", shipped.decision_reason
    assert [r.production.groups for r in shipped.sites] == [("register_rf_rope_graph_entries",)] * 2

    import importlib
    import sys

    import torch

    from sdcompile.phases.scaffold.selfcheck import import_source

    path = target / "mindiesd/compilation/patterns/rf_rope_pattern.py"
    generated = import_source(path.read_text(), path.stem, "patterns", str(path))
    before = torch.ops.mindiesd.residual_gate_add.default
    importlib.reload(sys.modules["mindiesd.layers.residual_gate_add"])
    after = torch.ops.mindiesd.residual_gate_add.default
    assert before is not after and str(before) == str(after)
    assert generated._same_op(before, after) and not generated._same_op(before, torch.ops.aten.add.Tensor)


@pytest.mark.slow
def test_heads_folded_into_channels_get_a_head_axis_around_the_fused_call(target, tmp_path, cli):
    """LTX rotates x as [B, S, H * D], before the head split: one rotation over H * D channels, which the fused
    op (4-D x) computes on [B, S, 1, H * D]. The replacement adds that axis to x and its tables and takes it off
    the result; so does a graph pass, around the op it inserts."""
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:folded_heads", name="rf", op="rope", dtype="fp32", repo=target, workdir=ws)
    if STACK_REWRITTEN:  # stack is rewritten: a GraphPatternEntry carrier
        assert result.decision == "generate" and result.gate == "pass", result.decision_reason
        (v,) = result.variants
        assert v.path == "graph-entry"
        assert v.replacement == ('npu.npu_rotary_mul.default(x.unsqueeze(-2), cos.unsqueeze(-2), '
                                 'sin.unsqueeze(-2), rotary_mode="interleave").squeeze(-2)'), v.replacement
        assert all(n.passed for n in result.numerics) and len(result.numerics) == 1
        assert all(s.check is not None and s.check.hit for s in result.sites)
        _register_and_pass_the_generated_test(cli, target, ws, 1)
        return
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    (v,) = result.variants
    assert [f"{i.role} {list(i.shape)}" for i in v.inputs] == ["x [1, 8, 32]", "cos [1, 8, 32]", "sin [1, 8, 32]"]
    assert v.replacement.startswith("mindiesd.rotary_position_embedding(x.unsqueeze(-2), cos.unsqueeze(-2), "
                                    'sin.unsqueeze(-2), rotated_mode="rotated_interleaved"')
    assert ").squeeze(-2).to(dtype)" in v.replacement
    assert all(n.passed for n in result.numerics)
    _register_and_pass_the_generated_test(cli, target, ws)


@pytest.mark.slow
def test_complex_pairs_get_the_interleaved_op_with_tables_from_the_complex_one(target, tmp_path, cli):
    """x's lanes as complex pairs times cos + i sin (QwenImage, Lumina2, Z-Image) is the interleaved rotation: the
    replacement takes the complex table as it meets x and feeds the op its real and imaginary parts, each over its
    pair of lanes. Roles come from data flow: the function takes the table first, and no input is named."""
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:complex_pairs", name="rf", op="rope", dtype="fp32", repo=target, workdir=ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    (v,) = result.variants
    assert v.path == "replacement"  # the complex ops register as the graph holds them on every supported torch
    assert [(i.role, list(i.shape), i.dtype) for i in v.inputs] == [("x", [1, 8, 2, 16], "torch.float32"),
                                                                    ("freqs", [8, 8], "torch.complex64")]
    assert "parts = torch.view_as_real(freqs_4d)" in v.replacement
    assert 'rotary_position_embedding(x, cos, sin, rotated_mode="rotated_interleaved"' in v.replacement
    assert all(n.passed for n in result.numerics) and all(s.check is not None and s.check.hit for s in result.sites)
    _in_the_guide(v.replacement.split("; "))  # the guide's example is this very replacement

    _register_and_pass_the_generated_test(cli, target, ws)


@pytest.mark.slow
def test_qwenimage_complex_rope_from_diffusers(target, tmp_path):
    """diffusers' apply_rotary_emb_qwen (use_real=False): the complex form, which no MindIE-SD 3.1.0 group covers on
    the zoo's tiny config; a pattern per distinct chain, every site hit, on either torch."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="qwenimage", op="rope", repo=target, workdir=tmp_path / "ws", dry_run=True)
    assert len(result.sites) == 4  # two streams (image, text), q and k each
    assert result.decision == "generate" and result.gate == "pass", (result.decision_reason, result.sites)
    assert {v.path for v in result.variants} == {"replacement"}
    assert all('rotated_mode="rotated_interleaved"' in v.replacement for v in result.variants)
    assert all(n.passed for n in result.numerics)
    assert all(s.check is not None and s.check.hit for s in result.sites)
    # ...and it is the guide's row for this torch
    from sdcompile.lifecycle.matrix.outcomes import outcome_section, row_of, section_rows

    guide = GUIDE.read_text(encoding="utf-8")
    assert row_of("qwenimage", result).markdown() == section_rows(guide, outcome_section("rope"))["qwenimage"]


@pytest.mark.slow
def test_rotation_matrices_get_the_interleaved_op_with_tables_from_their_entries(target, tmp_path, cli):
    """HiDream's form: x's lane pairs times 2 x 2 rotation matrices. The fused op's interleaved rotation takes a
    cos and a sin per lane, so cos = (F00, F11) and sin = (-F01, F10) over each pair compute the chain for any F;
    the matrices are told by their trailing 2 x 2, x by the view into pairs."""
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:rotation_matrices", name="rf", op="rope", dtype="fp32", repo=target,
                      workdir=ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    (v,) = result.variants
    assert [f"{i.role} {list(i.shape)} {i.dtype}" for i in v.inputs] == ["x [1, 8, 2, 16] torch.float32",
                                                     "freqs [1, 8, 1, 8, 2, 2] torch.float32"]
    assert "sin = torch.stack([-matrices[..., 0, 1], matrices[..., 1, 0]], dim=-1).flatten(-2)" in v.replacement
    _in_the_guide([x for x in v.replacement.split("; ") if x.startswith(("cos = ", "sin = "))])
    assert all(n.passed for n in result.numerics) and all(s.check is not None and s.check.hit for s in result.sites)
    _register_and_pass_the_generated_test(cli, target, ws)


@pytest.mark.slow
def test_strided_writes_get_the_interleaved_op_with_tables_taken_as_they_meet_x(target, tmp_path, cli):
    """Wan's form: out[..., 0::2] = x1 * c - x2 * s, out[..., 1::2] = x1 * s + x2 * c. There is no negation to tell
    the tables by: sin is the one whose product is subtracted. The replacement takes c and s as they meet x's lane
    pairs and repeats each over its pair. On a torch whose registration rewrites empty_like, the buffer stays
    outside the pattern and is an input the replacement never reads."""
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    # force: before torch 2.12 the target's own WanRopePatternGroup already covers this chain
    result = scaffold(model_file=f"{DATA}:strided_writes", name="rf", op="rope", dtype="fp32", repo=target,
                      workdir=ws, force=not STACK_REWRITTEN)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    (v,) = result.variants
    assert v.path == "replacement"
    roles = [f"{i.role} {list(i.shape)} {i.dtype}" for i in v.inputs]
    assert roles[:3] == ["x [1, 8, 2, 16] torch.float32", "cos [1, 8, 1, 16] torch.float32",
                         "sin [1, 8, 1, 16] torch.float32"]
    assert roles[3:] == (["out [1, 8, 2, 16] torch.float32"] if STACK_REWRITTEN else [])
    assert "cos_lanes = torch.stack([slice_, slice_], dim=-1).flatten(-2)" in v.replacement
    assert "rotary_position_embedding(x, cos_lanes, sin_lanes" in v.replacement
    assert all(n.passed for n in result.numerics) and all(s.check is not None and s.check.hit for s in result.sites)
    _in_the_guide([x for x in v.replacement.split("; ") if x.startswith(("cos_lanes = ", "sin_lanes = "))])
    _register_and_pass_the_generated_test(cli, target, ws)


@pytest.mark.slow
def test_even_and_odd_lanes_stacked_back_are_the_same_form(target, tmp_path, cli):
    """Mochi's form: lanes sliced 0::2 and 1::2, rotated by one cos and one sin per pair ([S, 1, D/2], shared by the
    heads) and stacked back. The same recipe: sin by the subtraction, the tables as they meet the lanes, repeated
    over each pair and left-padded to x's rank; a pattern where the stack registers as the graph holds it (torch
    2.11 and earlier). Where registration rewrites the stack, a GraphPatternEntry: its handler inserts the ATen ops
    the setup lines trace to (the tables repeated over each pair) before the op, and its generated test passes on
    the model."""
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:even_odd_lanes_shared", name="rf", op="rope", dtype="bf16", repo=target,
                      workdir=ws, dry_run=not STACK_REWRITTEN)
    assert result.decision == "generate" and result.gate == "pass", (result.decision_reason, result.sites)
    assert all(n.passed for n in result.numerics) and all(s.check is not None and s.check.hit for s in result.sites)
    if STACK_REWRITTEN:
        (choice,) = result.paths
        assert choice.path == "graph-entry" and "aten.stack.default" in _inner_op(choice.why)
        for v in result.variants:
            assert v.replacement.startswith("cos_lanes = torch.stack([cos, cos], dim=-1).flatten(-2); "), v.replacement
            assert 'npu.npu_rotary_mul.default(x, cos_lanes, sin_lanes, rotary_mode="interleave")' in v.replacement
        carrier = (target / "mindiesd/compilation/patterns/rf_rope_pattern.py").read_text()
        assert "traced = _insert_traced(graph, setup, (inputs[\"x\"], inputs[\"cos\"], inputs[\"sin\"]))" in carrier
        _register_and_pass_the_generated_test(cli, target, ws, 1)
        return
    (v,) = result.variants
    assert [f"{i.role} {list(i.shape)}" for i in v.inputs] == ["x [1, 8, 2, 16]", "cos [8, 1, 8]", "sin [8, 1, 8]"]
    assert "cos_lanes = cos_lanes.reshape((1,) * (x.dim() - cos_lanes.dim())" in v.replacement


def _refused_by_the_interleave_contract(result) -> str:
    """The numerics gate's words when every variant's fused call was refused by npu_rotary_mul's contract."""
    assert result.decision == "cannot generate", (result.decision_reason, result.sites)
    from sdcompile.phases.scaffold.render import render_scaffold
    from sdcompile.rendering.output import rendered

    said = " ".join(rendered(render_scaffold, result, 200).split())
    assert "ContractViolation: npu_rotary_mul: in rotary_mode='interleave': r1" in said, said
    assert "folded into the sequence" in said
    return said


@pytest.mark.slow
def test_tables_per_head_are_refused_by_the_interleave_mode_of_the_fused_op(target, tmp_path):
    """Mochi's own tables ([S, H, D/2], a rotation per head): npu_rotary_mul's interleave mode takes r1/r2 only as
    11SD, 1S1D or S11D (torch_npu's documented contract), so the replacement the recipe writes would raise on the
    NPU; scaffold writes nothing and says why, with the fold that makes the tables fit."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{DATA}:even_odd_lanes", name="rf", op="rope", dtype="bf16", repo=target,
                      workdir=tmp_path / "ws", dry_run=True)
    _refused_by_the_interleave_contract(result)


@pytest.mark.slow
def test_mochi_rope_compiled_in_a_graph_of_its_own_from_diffusers(target, tmp_path):
    """Mochi's attention processor breaks the graph (an aten.nonzero), so dynamo compiles its RoPE function in a
    graph of its own, with no module context, shared by every call. scaffold finds the site there by the function's
    code, and refuses to generate: its tables are per head, which the fused op's interleave mode does not take."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="mochi", op="rope", repo=target, workdir=tmp_path / "ws", dry_run=True)
    (site,) = result.sites
    assert site.site == "transformer_blocks.0.attn1" and site.nodes == 14, site
    _refused_by_the_interleave_contract(result)


@pytest.mark.slow
def test_wan_strided_rope_from_diffusers(target, tmp_path):
    """diffusers' Wan apply_rotary_emb: MindIE-SD's own WanRopePatternGroup covers it on torch 2.11 and earlier; on
    2.12 and later (its empty_like registers as empty.memory_format) scaffold generates the strided form beside the
    target's own group, under wan_gen names, and writes over that group only when --name says so."""
    from sdcompile.lifecycle.matrix.outcomes import outcome_section, row_of, section_rows
    from sdcompile.phases.scaffold.phase import scaffold

    own = target / "mindiesd/compilation/patterns/wan_rope_pattern.py"
    before = own.read_bytes()
    result = scaffold(model="wan", op="rope", repo=target, workdir=tmp_path / "ws")
    assert len(result.sites) == 2  # q and k
    if STACK_REWRITTEN:
        assert result.decision == "generate" and result.gate == "pass", (result.decision_reason, result.sites)
        assert all("cos_lanes" in v.replacement for v in result.variants)
        assert all(n.passed for n in result.numerics) and all(s.check.hit for s in result.sites)
        # the names --model wan derives are MindIE-SD's own group: the generated one goes beside it
        assert result.names.group == "WanGenRopePatternGroup", result.names
        (own_names,) = [n for n in result.notes if n.code == Why.BESIDE_TARGET_OWN]
        assert (own_names.facts["group"], own_names.facts["flag"]) == ("WanRopePatternGroup", "enable_wan_rope")
        assert [f.path for f in result.files if f.kind == "pattern"] == [
            "mindiesd/compilation/patterns/wan_gen_rope_pattern.py"] and own.read_bytes() == before
        register = next(s for s in result.next_steps if s.startswith("sdcompile register"))
        assert "--model wan --op rope --flag enable_wan_gen_rope --group WanGenRopePatternGroup" in register
    else:
        assert result.decision == "reuse", result.decision_reason
    guide = GUIDE.read_text(encoding="utf-8")
    assert row_of("wan", result).markdown() == section_rows(guide, outcome_section("rope"))["wan"]


@pytest.mark.slow
def test_leading_channels_rotated_get_the_op_on_those_channels_and_the_rest_passed_through(target, tmp_path, cli):
    """Tables narrower than x's heads (16 of 32 channels): the op takes x's leading channels, the others are
    concatenated back as the chain passes them; the generated group passes its own test."""
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:partial_rotary", name="rf", op="rope", dtype="fp32", repo=target,
                      workdir=ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    assert [s.site for s in result.sites] == ["#1", "#2"]
    (v,) = result.variants
    cos, sin = (dict(v.bound)[r] for r in ("cos", "sin"))  # as they meet x: [1, S, 1, 16]
    assert (f"torch.cat([mindiesd.rotary_position_embedding(x[..., :{cos}.shape[-1]], {cos}, {sin}, "
            'rotated_mode="rotated_half"') in v.replacement
    assert v.replacement.endswith(f"x[..., {cos}.shape[-1]:]], dim=-1)")
    assert all(n.passed for n in result.numerics) and all(s.check.hit for s in result.sites)

    _register_and_pass_the_generated_test(cli, target, ws)


@pytest.mark.slow
def test_minimax_h3_partial_rope_from_diffusers(target, tmp_path):
    """diffusers' MiniMax-H3 _apply_rotary_emb rotates the leading channels of each head only; MindIE-SD's own
    MiniMaxH3RopePatternGroup (its width baked in) raises on the tiny config, and the generated group goes beside it
    under minimax_h3_gen names, on either torch."""
    from sdcompile.lifecycle.matrix.outcomes import outcome_section, row_of, section_rows
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="minimax_h3", op="rope", repo=target, workdir=tmp_path / "ws", dry_run=True)
    assert len(result.sites) == 2  # q and k
    assert result.decision == "generate" and result.gate == "pass", (result.decision_reason, result.sites)
    (v,) = result.variants
    assert v.path == "replacement" and "torch.cat([mindiesd.rotary_position_embedding(x[..., :" in v.replacement
    _in_the_guide([v.replacement.split("; ")[-1]])  # the guide's example is this very call
    assert all(n.passed for n in result.numerics) and all(s.check.hit for s in result.sites)
    assert result.names.group == "MiniMaxH3GenRopePatternGroup", result.names
    guide = GUIDE.read_text(encoding="utf-8")
    assert row_of("minimax_h3", result).markdown() == section_rows(guide, outcome_section("rope"))["minimax_h3"]


def _inner_op(why) -> list[str] | None:
    """The ops a path choice says sit inside the chain (auto took an entry because registration rewrites them)."""
    if why.code != Why.AUTO_ENTRY or why.facts["refusal"].code != Why.INNER_OP:
        return None
    return why.facts["refusal"].facts["inner"]
