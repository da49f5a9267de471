"""The pieces under scaffold, on real graphs: chain extraction from a compiled torch.nn.RMSNorm, the registration
probe through the target's own PatternMatchPass, constants, templates, line fitting, file writes, the backend edit."""

from __future__ import annotations

import pytest
from torch_ranges import behaviour_state

from sdcompile.core.torchcompat.behaviours import holds

NPU_CASTS = "to-dtype-is-_npu_dtype_cast" in behaviour_state()  # Tensor.to(dtype) traces as npu._npu_dtype_cast


@pytest.fixture(scope="module")
def rmsnorm_graph():
    """torch.nn.RMSNorm(16) in bf16, compiled the way MindieSDBackend does: the before-freezing stage."""
    import torch

    from sdcompile.core.graph.capture import capture_graphs

    module = torch.nn.RMSNorm(16, eps=1e-6).to(torch.bfloat16)
    x = torch.randn(2, 3, 16, dtype=torch.bfloat16)
    capture = capture_graphs(module, {"x": x}, model="rmsnorm", dtype="bf16")
    [stage] = capture.stage("before_freezing")
    return stage


def _nodes(stage):
    return [n for n in stage.gm.graph.nodes if n.op == "call_function"]


def _recipe():
    from sdcompile.core.graph.pattern_recipes import load_recipes

    return load_recipes()["rmsnorm"]


def test_chain_is_the_graph_node_for_node(rmsnorm_graph):
    import torch

    from sdcompile.core.graph.pattern_codegen import extract_chain
    from sdcompile.core.graph.pattern_recipes import replacement_expr

    chain = extract_chain(_nodes(rmsnorm_graph), _recipe(), torch.bfloat16)
    # rms_norm's upcast is Tensor.to, which torch_npu < 2.9 traces as its own cast; its final cast stays _to_copy
    upcast = "npu._npu_dtype_cast.default" if NPU_CASTS else "aten._to_copy.default"
    assert chain.targets == (
        upcast, "aten.pow.Tensor_Scalar", "aten.mean.dim", "aten.add.Scalar",
        "aten.rsqrt.default", "aten.mul.Tensor", "aten.mul.Tensor", "aten._to_copy.default",
    )
    assert [(i.role, i.shape, i.dtype_expr, i.holder) for i in chain.inputs] == [
        ("x", (2, 3, 16), "dtype", "placeholder"), ("weight", (16,), "dtype", "placeholder")]
    [eps] = chain.constants
    assert (eps.graph_value, eps.spelled, eps.fp32_rounded) == (9.999999974752427e-07, "1e-06", True)
    body = chain.search_body
    assert body[0] == ("npu_dtype_cast = torch.ops.npu._npu_dtype_cast.default(x, torch.float32)" if NPU_CASTS
                       else "to_copy = torch.ops.aten._to_copy.default(x, dtype=torch.float32)")
    assert "mean = torch.ops.aten.mean.dim(pow_, [2], True)" in body  # the graph's literal dim, not -1
    assert "add = torch.ops.aten.add.Scalar(mean, _epsilon)" in body
    # the model dtype is symbolic, the device is the input's, everything else literal
    assert body[-2].endswith("_to_copy.default(mul_1, dtype=dtype, layout=torch.strided, device=x.device)")
    assert replacement_expr(_recipe(), chain) == "torch_npu.npu_rms_norm(x, weight, epsilon=_epsilon)[0]"


def test_chain_refuses_what_one_replacement_cannot_stand_for(rmsnorm_graph):
    import torch

    from sdcompile.core.graph.pattern_chain import ChainError
    from sdcompile.core.graph.pattern_codegen import extract_chain

    nodes = _nodes(rmsnorm_graph)
    without_rsqrt = [n for n in nodes if "rsqrt" not in str(n.target)]
    with pytest.raises(ChainError, match="values used outside it"):
        extract_chain(without_rsqrt, _recipe(), torch.bfloat16)
    up_to_norm = nodes[:6]  # x * rsqrt(...), before the weight: one input, two roles
    with pytest.raises(ChainError, match="takes 1 input"):
        extract_chain(up_to_norm, _recipe(), torch.bfloat16)


def test_an_exact_gelu_is_refused_naming_the_value_it_has_by_default():
    """aten.gelu with no `approximate` is the exact GELU (the schema's default 'none'); the fused GELU stands for
    the tanh one only, and the refusal says 'none', not a missing None."""
    import torch

    from sdcompile.core.graph.capture import capture_graphs
    from sdcompile.core.graph.pattern_chain import ChainError
    from sdcompile.core.graph.pattern_codegen import extract_chain
    from sdcompile.core.graph.pattern_recipes import load_recipes

    x = torch.randn(2, 3, 16, dtype=torch.bfloat16)
    [exact] = capture_graphs(torch.nn.GELU(), {"input": x}, freezing=False).stage("before_freezing")
    with pytest.raises(ChainError, match=r"has approximate='none'; the .* stands for approximate='tanh' only"):
        extract_chain(_nodes(exact), load_recipes()["gelu"], torch.bfloat16)
    [tanh] = capture_graphs(torch.nn.GELU("tanh"), {"input": x}, freezing=False).stage("before_freezing")
    assert extract_chain(_nodes(tanh), load_recipes()["gelu"], torch.bfloat16) is not None


def test_registration_probe_finds_what_register_replacement_rewrites(rmsnorm_graph, mindiesd_tree):
    import torch

    from sdcompile.core.graph.pattern_codegen import extract_chain
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target
    from sdcompile.phases.scaffold.registration_probe import probe, trim

    load_target(find_target(mindiesd_tree), reload=True)
    nodes = _nodes(rmsnorm_graph)
    chain = extract_chain(nodes, _recipe(), torch.bfloat16)
    result = probe(chain, torch.bfloat16)
    if not holds("decomposition-override"):  # torch <= 2.11: registered as written, nothing to trim
        assert result.lost == () and result.gained == ()
        return
    # torch >= 2.12: register_replacement traces with inductor's decompositions: the casts come back as prims
    assert result.lost == ("aten._to_copy.default",)
    assert result.gained == ("prims.convert_element_type.default",)
    kept, dropped = trim(nodes, result.lost)
    assert dropped == ["aten._to_copy.default on the output", "aten._to_copy.default on an input"]
    trimmed = extract_chain(kept, _recipe(), torch.bfloat16)
    assert probe(trimmed, torch.bfloat16).lost == ()
    assert [i.dtype_expr for i in trimmed.inputs] == ["torch.float32", "dtype"]


@pytest.mark.parametrize(("value", "spelled", "rounded"), [
    (9.999999974752427e-07, "1e-06", True),  # torch.rms_norm's float32 eps
    (1e-06, "1e-06", False),  # diffusers RMSNorm: `variance + self.eps`, a Python float
    (9.999999747378752e-06, "1e-05", True),
    (0.5, "0.5", False),
    (0.1234567891, "0.1234567891", False),
])
def test_constants_spelled_so_the_factory_reproduces_the_graph_value(value, spelled, rounded):
    import torch

    from sdcompile.core.graph.pattern_chain import spell_constant

    assert spell_constant(value) == (spelled, rounded)
    back = torch.tensor(float(spelled), dtype=torch.float32).item() if rounded else float(spelled)
    assert back == value


def test_templates_are_strict_and_identifiers_checked():
    import jinja2

    from sdcompile.phases.scaffold.sources import PATTERN_TEMPLATE, identifier, render
    from sdcompile.util.errors import BadInput

    with pytest.raises(jinja2.UndefinedError):
        render(PATTERN_TEMPLATE, {"header": {"generated_by": "x", "inputs": "y", "regenerate": "z"}})
    for bad in ("class", "1abc", "a-b", "x; import os"):
        with pytest.raises(BadInput):
            identifier(bad, "group")
    assert identifier("FluxRmsNormPatternGroup", "group") == "FluxRmsNormPatternGroup"


def test_fit_wraps_long_calls_and_comments_but_not_docstrings():
    from sdcompile.phases.scaffold.sources import fit

    call = "        out = torch.ops.aten._to_copy.default(" + ", ".join(f"argument_{i}" for i in range(12)) + ")"
    comment = "    # " + "word " * 40
    doc = '"""' + "d" * 130 + '"""'
    lines = fit("\n".join([call, comment, doc]), 120).splitlines()
    assert all(len(line) <= 120 for line in lines if not line.startswith('"""'))
    assert lines[0] == "        out = torch.ops.aten._to_copy.default(" and lines[1] == "            argument_0,"
    assert doc in lines
    compile("\n".join(line.strip() for line in fit(call.strip(), 40).splitlines()), "x", "exec")


def test_files_never_overwrite_without_force_and_write_all_or_nothing(tmp_path):
    from sdcompile.core.target.discovery import TargetTree
    from sdcompile.phases.scaffold.files import PlannedFile, outcomes, refuse_overwrite, write_all
    from sdcompile.util.errors import BadInput

    tree = TargetTree(tmp_path, "3.1.0", "test")
    existing = tmp_path / "a.py"
    existing.write_text("hand edited\n")
    planned = [PlannedFile(existing, "a.py", "pattern", "generated\n"),
               PlannedFile(tmp_path / "new" / "b.py", "new/b.py", "pattern test", "test\n")]
    results = outcomes(planned, dry_run=False, force=False)
    assert [r.status for r in results] == ["exists", "created"]
    # a file sdcompile did not write (the target's own, under the derived names): other names are the way out
    with pytest.raises(BadInput, match="a.py already exists, not written by sdcompile") as theirs:
        refuse_overwrite(results, planned, "flux")
    assert "--name flux_gen" in theirs.value.fix
    # one scaffold wrote earlier and the user edited: --force regenerates it
    existing.write_text("# Generated by `sdcompile scaffold --model flux --op rmsnorm` (sdcompile 0.2.0).\nedited\n")
    with pytest.raises(BadInput, match="a.py already exists and differ") as ours:
        refuse_overwrite(outcomes(planned, dry_run=False, force=False), planned, "flux")
    assert "--force" in ours.value.fix and "--name" not in ours.value.fix
    existing.write_text("hand edited\n")
    assert [r.status for r in outcomes(planned, dry_run=True, force=True)] == ["would overwrite", "would create"]
    assert "-hand edited\n+generated\n" in outcomes(planned, dry_run=True, force=True)[0].diff

    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder is needed\n")
    failing = [planned[0], PlannedFile(blocker / "c.py", "blocker/c.py", "pattern test", "x\n")]
    with pytest.raises(BadInput, match="every file is as it was"):
        write_all(failing, tree)
    assert existing.read_text() == "hand edited\n"

    write_all(planned, tree)
    assert existing.read_text() == "generated\n" and (tmp_path / "new/b.py").read_text() == "test\n"
    assert [r.status for r in outcomes(planned, dry_run=False, force=False)] == ["unchanged", "unchanged"]


def test_backend_edit_calls_the_pass_after_freezing_once(mindiesd_tree):
    import ast

    from sdcompile.core.target.edits.backend_pass import ensure_pass_call
    from sdcompile.util.text_diff import unified_diff

    backend = mindiesd_tree / "mindiesd/compilation/mindie_sd_backend.py"
    old = backend.read_bytes()
    new = ensure_pass_call(old, "flux_rmsnorm_pass", "FluxRmsNormGraphPass", "why it is here", "backend")
    diff = unified_diff(old, new, "mindiesd/compilation/mindie_sd_backend.py")
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["+            # why it is here",
                     "+            from .passes.flux_rmsnorm_pass import FluxRmsNormGraphPass",
                     "+            FluxRmsNormGraphPass()(fx_graph)"]
    tree = ast.parse(new)
    func = next(n for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef) and n.name == "graph_rewrite_after_freezing")
    calls = [ast.unparse(s) for s in func.body]
    assert calls[0] == "self.__class__.apply_redundant_node_elimination_pass(fx_graph, inputs)"
    assert calls[2] == "FluxRmsNormGraphPass()(fx_graph)"
    assert ensure_pass_call(new, "flux_rmsnorm_pass", "FluxRmsNormGraphPass", "why", "backend") == new


@pytest.mark.slow
def test_two_implementations_with_two_eps_share_one_pattern_with_an_entry_per_eps(target, tmp_path):
    """A user's model file with its own RMSNorm (eps 1e-6) and an RMSNorm by another name (eps 1e-5): in fp32 both
    trace to the same chain but for the constant, so one pattern class serves both, registered once per eps and
    named apart; the generated test then runs through the target's backend."""
    from pathlib import Path

    from scaffold_helpers import lint, passed_count, run_generated_tests

    from sdcompile.phases.register.phase import register
    from sdcompile.phases.scaffold.phase import scaffold
    from sdcompile.util.errors import BadInput

    model_file = Path(__file__).resolve().parents[1] / "analyze/data/handwritten_model.py"
    result = scaffold(model_file=f"{model_file}:build", name="handwritten", op="rmsnorm", dtype="fp32", repo=target,
                      workdir=tmp_path / "ws")
    assert result.decision == "generate" and result.gate == "pass"
    [variant] = result.variants
    assert variant.implementation == "handwritten_model.MyRMSNorm, handwritten_model.ScaleNorm"
    assert variant.entries == ("create(torch.float32, epsilon=1e-06)", "create(torch.float32, epsilon=1e-05)")
    hits = {r.site: r.check.by for r in result.sites}
    assert hits == {"q_norm": ("HandwrittenRmsNormPatternGroup: HandwrittenRmsNormPattern-torch.float32-epsilon1e-06",),
                    "k_norm": ("HandwrittenRmsNormPatternGroup: HandwrittenRmsNormPattern-torch.float32-epsilon1e-05",)}
    pattern = target / "mindiesd/compilation/patterns/handwritten_rmsnorm_pattern.py"
    assert 'return __class__.__name__ + f"-{dtype}-epsilon{epsilon}"' in pattern.read_text()
    test_file = "tests/compilation/patterns/test_handwritten_rmsnorm_pattern.py"
    assert lint(pattern, target / test_file).returncode == 0, lint(pattern, target / test_file).stdout
    assert "sdcompile register --model handwritten --op rmsnorm" in result.next_steps[0]

    # a hand-edited generated file is never overwritten without --force: refused, every file as it was
    edited = pattern.read_text() + "# my edit\n"
    pattern.write_text(edited)
    with pytest.raises(BadInput, match="already exists and differ"):
        scaffold(model_file=f"{model_file}:build", name="handwritten", op="rmsnorm", dtype="fp32", repo=target,
                 workdir=tmp_path / "ws")
    assert pattern.read_text() == edited
    pattern.write_text(edited.removesuffix("# my edit\n"))

    register(target, "handwritten", "rmsnorm", workdir=tmp_path / "ws")
    proc = run_generated_tests(target, test_file)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert passed_count(proc.stdout) == 4  # the numerics check, two site modules and the model


def _gelu_site_nodes(approximate: str):
    """A diffusers-style GELU module (projection, then GELU) in bf16, as the pattern pass sees it."""
    import torch

    from sdcompile.core.graph.capture import capture_graphs

    class ProjectedGelu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 16)

        def forward(self, x):
            return torch.nn.functional.gelu(self.proj(x), approximate=approximate)

    module = ProjectedGelu().to(torch.bfloat16)
    capture = capture_graphs(module, {"x": torch.randn(2, 3, 8, dtype=torch.bfloat16)}, model="gelu", dtype="bf16")
    [stage] = capture.stage("before_freezing")
    return _nodes(stage)


def test_gelu_chain_starts_at_the_gelu_and_stands_for_the_tanh_gelu_only():
    import torch

    from sdcompile.core.graph.pattern_chain import ChainError
    from sdcompile.core.graph.pattern_codegen import extract_chain
    from sdcompile.core.graph.pattern_recipes import load_recipes, replacement_expr

    recipe = load_recipes()["gelu"]
    nodes = _gelu_site_nodes("tanh")
    assert len(nodes) > 1 and str(nodes[-1].target) == "aten.gelu.default"  # the projection's ops come first
    chain = extract_chain(nodes, recipe, torch.bfloat16)
    # the module's projection is in the site but not in the chain: its weight is no role of npu_fast_gelu
    assert chain.targets == ("aten.gelu.default",)
    assert chain.search_body == ["gelu = torch.ops.aten.gelu.default(x, approximate='tanh')", "return gelu"]
    assert [(i.role, i.shape) for i in chain.inputs] == [("x", (2, 3, 16))]
    assert replacement_expr(recipe, chain) == "torch_npu.npu_fast_gelu(x)"

    with pytest.raises(ChainError, match="approximate='tanh' only"):
        extract_chain(_gelu_site_nodes("none"), recipe, torch.bfloat16)
    with pytest.raises(ChainError, match="no aten.gelu.default"):
        extract_chain(nodes[:-1], recipe, torch.bfloat16)


def _modulated_layer_norm_nodes(shift_first: bool):
    """LayerNorm without affine, modulated as diffusers' AdaLayerNormZero does, in bf16; scale and shift come in
    as forward arguments, in either order."""
    import torch

    from sdcompile.core.graph.capture import capture_graphs

    class Modulated(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(16, elementwise_affine=False, eps=1e-6)

        def forward(self, x, a, b):
            scale, shift = (b, a) if shift_first else (a, b)
            return self.norm(x) * (1 + scale[:, None]) + shift[:, None]

    module = Modulated().to(torch.bfloat16)
    inputs = {name: torch.randn(*shape, dtype=torch.bfloat16)
              for name, shape in (("x", (2, 5, 16)), ("a", (2, 16)), ("b", (2, 16)))}
    capture = capture_graphs(module, inputs, model="adaln", dtype="bf16")
    [stage] = capture.stage("after_freezing")
    # forward argument -> its placeholder (dynamo orders graph inputs by first use, not by the signature)
    placeholder = {stage.origins[n.name].name: n.name for n in stage.gm.graph.nodes if n.op == "placeholder"}
    return _nodes(stage), placeholder


@pytest.mark.parametrize("shift_first", [False, True], ids=["scale-then-shift", "shift-then-scale"])
def test_adaln_roles_are_told_apart_by_the_flow_not_the_order(shift_first):
    """scale and shift have the same rank and size; scale is the one that flows into the multiply."""
    import torch

    from sdcompile.core.graph.pattern_codegen import extract_chain
    from sdcompile.core.graph.pattern_recipes import load_recipes, replacement_expr, replacement_setup

    recipe = load_recipes()["adaln"]
    nodes, placeholder = _modulated_layer_norm_nodes(shift_first)
    chain = extract_chain(nodes, recipe, torch.bfloat16)
    scale_arg, shift_arg = ("b", "a") if shift_first else ("a", "b")
    assert {i.role: i.node for i in chain.inputs} == {
        "x": placeholder["x"], "scale": placeholder[scale_arg], "shift": placeholder[shift_arg]}
    assert chain.targets[0] == "aten.native_layer_norm.default"
    [eps] = chain.constants
    assert (eps.name, eps.graph_value) == ("epsilon", 1e-6)
    assert replacement_expr(recipe, chain) == (
        "mindiesd.layernorm_scale_shift(layernorm=layer_norm, x=x, scale=scale, shift=shift, fused=True)")
    # a LayerNorm without affine: the module layernorm_scale_shift reads eps from, and no weight or bias
    assert replacement_setup(recipe, chain) == [
        "layer_norm = torch.nn.LayerNorm(x.shape[-1], eps=_epsilon, elementwise_affine=False, device=x.device, "
        "dtype=x.dtype)"]


def test_modulation_after_an_rmsnorm_is_refused_naming_the_norm_and_the_op_that_remains():
    """LTX's blocks modulate an RMSNorm's output: no LayerNorm for mindiesd::adaln to stand for. The refusal finds
    the RMSNorm above the site's input and names the way out; without it, only that the LayerNorm is missing."""
    import dataclasses

    import torch

    from sdcompile.core.graph.capture import capture_graphs
    from sdcompile.core.graph.pattern_chain import ChainError
    from sdcompile.core.graph.pattern_codegen import extract_chain
    from sdcompile.core.graph.pattern_recipes import load_recipes

    class RmsModulated(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.RMSNorm(16, eps=1e-6)
            with torch.no_grad():
                self.norm.weight.copy_(1 + 0.1 * torch.randn(16))

        def forward(self, x, scale, shift):
            return self.norm(x) * (1 + scale[:, None]) + shift[:, None]

    module = RmsModulated().to(torch.bfloat16)
    inputs = {name: torch.randn(*shape, dtype=torch.bfloat16)
              for name, shape in (("x", (2, 5, 16)), ("scale", (2, 16)), ("shift", (2, 16)))}
    [stage] = capture_graphs(module, inputs, model="rms-adaln", dtype="bf16").stage("before_freezing")
    arg = {stage.origins[n.name].name: n for n in stage.gm.graph.nodes if n.op == "placeholder"
           if n.name in stage.origins}
    # the site: the inline modulation, what scale and shift flow into (the norm module is a site of its own)
    site, frontier = [], [arg["scale"], arg["shift"]]
    while frontier:
        node = frontier.pop()
        for user in node.users:
            if user.op == "call_function" and user not in site:
                site.append(user)
                frontier.append(user)
    order = {n: k for k, n in enumerate(stage.gm.graph.nodes)}
    site.sort(key=order.__getitem__)
    assert not any("rsqrt" in str(n.target) for n in site)

    recipe = load_recipes()["adaln"]
    with pytest.raises(ChainError, match=r"its input comes from an RMSNorm \(rsqrt.*\): mindiesd::adaln computes a "
                                         r"LayerNorm.*mindiesd::scale_shift"):
        extract_chain(site, recipe, torch.bfloat16)
    with pytest.raises(ChainError, match=r"nor does any input come straight from one: not the AdaLN chain the "
                                         r"replacement stands for$"):
        extract_chain(site, dataclasses.replace(recipe, other_starts={}), torch.bfloat16)


def test_example_inputs_are_laid_out_in_memory_as_the_graph_values_are():
    """A chain input the graph holds transposed (its last dim not innermost) is made so for the registration probe
    and the numerics gate: an op like view_as_complex fails on a contiguous stand-in of another layout."""
    import torch

    from sdcompile.core.graph.pattern_chain import laid_out

    value = torch.randn(2, 4, 3).transpose(1, 2)  # [2, 3, 4] with dims 2 then 1 in memory
    order = tuple(sorted(range(3), key=lambda d: (-value.stride()[d], d)))
    made = laid_out(torch.empty, tuple(value.shape), order)
    assert made.shape == value.shape and made.stride() == value.stride()
    assert laid_out(torch.empty, (2, 3, 4), ()).is_contiguous()
