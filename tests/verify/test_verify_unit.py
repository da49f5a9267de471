"""verify's unit level on the real 3.1.0 patterns: self-consistency, graph checks, numerics, where patterns part."""

import json
import math

import pytest
import torch
from torch_ranges import behaviour_state

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.verify.phase import run_verify
from sdcompile.phases.verify.unit import run_unit_case
from sdcompile.testing.numerics import (
    DEFAULT_MIN_COSINE,
    ELEMENT_BUDGET,
    compare,
    example_inputs,
)
from sdcompile.workspace.artifacts import artifact_text, read_artifact

# the running torch's behaviour, probed: expectations that differ by torch branch on it
DECOMPOSITION_OVERRIDE = holds("decomposition-override")
NPU_CASTS = "to-dtype-is-_npu_dtype_cast" in behaviour_state()  # torch_npu < 2.9: Tensor.to is npu._npu_dtype_cast


def _pattern(target, group, name):
    return next(p for p in target.pattern_classes(group) if p.name() == name)


def test_wan_rmsnorm_on_a_bf16_module_written_like_the_pattern(target, tmp_path):
    group = target.group("WanRmsNormPatternGroup")
    case = run_unit_case(target, group, _pattern(target, group.group, "WanRmsNormPattern-torch.bfloat16"),
                         DEFAULT_MIN_COSINE, tmp_path)
    assert case.error is None and case.passed
    assert case.replacements == 1 and case.pass_log_counts == (1,) and case.own_hits == 1
    assert case.graph.fused_ops_found == {"npu.npu_rms_norm.default": 1}
    assert {"aten.pow.Tensor_Scalar", "aten.mean.dim", "aten.rsqrt.default"} <= set(case.graph.original_ops)
    assert case.graph.originals_gone and not case.graph.originals_left
    assert case.numerics.cosine >= 0.999 and case.numerics.upstream_gate
    assert 0 < case.numerics.max_abs < 0.5  # bf16 rounding, not an identical result
    after = (tmp_path / "unit" / "WanRmsNormPattern-torch.bfloat16" / "aot.pattern_match_pass.after.txt").read_text()
    assert "npu.npu_rms_norm.default" in after and "rsqrt" not in after
    assert all(s.dtype == "torch.bfloat16" for s in case.inputs)


def test_the_cosine_gate_is_configurable_and_upstreams_is_reported_beside_it(target):
    group = target.group("WanRmsNormPatternGroup")
    case = run_unit_case(target, group, _pattern(target, group.group, "WanRmsNormPattern-torch.bfloat16"),
                         1.0, None)
    assert case.replacements == 1 and not case.passed  # bf16 rounding keeps cosine just below 1
    assert not case.numerics.passed and case.numerics.upstream_gate


def test_all_groups_report_self_consistency_and_where_each_failure_parts(target, tmp_path):
    report = run_verify(repo=target.tree.root, workdir=tmp_path, all_groups=True)
    assert report.device == "cpu (emulated npu)" and "not exercised here" in report.timing_note
    assert len(report.groups) == 16 and all(g.load_error is None and g.unit for g in report.groups)
    for g in report.groups:
        for c in g.unit:
            if c.passed:
                assert c.replacements >= 1 and c.numerics.passed and c.graph.originals_gone
                assert c.graph.fused_present in (True, None)
            else:  # every failure says why: an error, or the first node pair where pattern and graph part
                assert c.error or c.divergence or (c.numerics and not c.numerics.passed), c
                if c.divergence and c.divergence.stage in ("structure", "exact"):
                    d = c.divergence
                    assert d.graph_node and d.pattern_node and d.torch_message, d
                    assert d.mismatch is not None and 1 <= d.mismatch.type <= 7 and d.mismatch.fix, d
    by_name = {g.group: g for g in report.groups}
    # a variant shadowed by an earlier-registered sibling: nothing differs, torch's matcher accepts it too
    shadowed = next(c for c in by_name["WanRmsNormPatternGroup"].unit if c.pattern.endswith("float32"))
    assert shadowed.own_hits == 0 and shadowed.divergence.stage == "matches"
    assert "WanRmsNormPattern-torch.bfloat16" in shadowed.divergence.reason and shadowed.divergence.mismatch is None
    # WanRope reads even cos / odd sin lanes only: judged on pair-repeated tables from real angles, as models build
    wan_rope = by_name["WanRopePatternGroup"].unit[0]
    assert [s.content.split(" table")[0] for s in wan_rope.inputs] == ["random", "RoPE cos", "RoPE sin"]
    assert all("pair-repeated" in s.content for s in wan_rope.inputs[1:])
    if DECOMPOSITION_OVERRIDE:  # torch >= 2.12: register_replacement traces with inductor's table
        _all_groups_with_the_decomposition_override(by_name, report)
    elif NPU_CASTS:
        _all_groups_with_npu_casts(by_name, report)
    else:
        _all_groups_registered_as_written(by_name, report)
    folder = tmp_path / "_verify" / "all-groups"
    assert read_artifact("verify", folder / "verify.json") == json.loads(artifact_text("verify", report))
    assert "GELUPatternGroup" in (folder / "verify.md").read_text()


def _all_groups_registered_as_written(by_name, report):
    """torch <= 2.11: the trace function's own (empty) table applies, so every group replaces its own search
    function; GELU's fused op approximates the tanh GELU and passes within its documented error."""
    assert [g.group for g in report.groups if not g.passed] == [] and report.passed
    # what never replaced itself was shadowed by an earlier sibling, which torch's matcher confirms
    divergences = [c.divergence for g in report.groups for c in g.unit if c.divergence]
    assert divergences and all(d.stage == "matches" and d.mismatch is None for d in divergences)
    gelu = by_name["GELUPatternGroup"].unit[0]
    assert gelu.own_hits == 1 and gelu.numerics.approximation_atol == pytest.approx(0.021)
    assert by_name["WanRopePatternGroup"].unit[0].numerics.cosine > 0.9999


def _all_groups_with_npu_casts(by_name, report):
    """torch_npu < 2.9: registered as written, but a search function run as a model casts with Tensor.to, which
    traces as npu._npu_dtype_cast on the NPU and as aten._to_copy in the registered (meta-device) pattern: only
    QwenRope, the one group casting with Tensor.to instead of the per-torch cast op, misses itself."""
    assert [g.group for g in report.groups if not g.passed] == ["QwenRopePatternGroup"] and not report.passed
    [case] = [c for c in by_name["QwenRopePatternGroup"].unit if not c.passed]  # float32: the casts are no-ops
    d = case.divergence
    assert case.pattern.endswith("bfloat16") and case.own_hits == 0, case
    assert (d.mismatch.type, d.mismatch.cause) == (3, "cast_op"), d
    assert "aten._to_copy.default" in d.pattern_node and "npu._npu_dtype_cast.default" in d.graph_node
    assert "torch.ops.npu._npu_dtype_cast.default(x, torch.bfloat16)" in d.mismatch.fix
    assert d.matched == d.total - 2  # the cos and sin casts; everything else lines up
    gelu = by_name["GELUPatternGroup"].unit[0]
    assert gelu.own_hits == 1 and gelu.numerics.approximation_atol == pytest.approx(0.021)


def _all_groups_with_the_decomposition_override(by_name, report):
    assert by_name["WanRmsNormPatternGroup"].passed and by_name["MulAddPatternGroup"].passed
    gelu = by_name["GELUPatternGroup"].unit[0].divergence
    assert by_name["GELUPatternGroup"].unit[0].replacements == 0 and gelu.stage == "structure"
    assert gelu.graph_node.startswith("gelu: ") and "aten.gelu.default" in gelu.graph_node
    assert "prims.convert_element_type.default" in gelu.pattern_node  # registered decomposed
    assert gelu.torch_message.startswith("never starts here")
    assert (gelu.mismatch.type, gelu.mismatch.cause) == (1, "decomposition")
    assert "PatternMatchPass.register_pattern" in gelu.mismatch.fix  # the fix for this torch
    # the fix is checked: registered with the backend's own (empty) table, the pattern replaces the graph
    assert any(e.startswith("checked:") and "this pattern replaces this site" in e for e in gelu.mismatch.evidence)
    # every decomposition mismatch is the whole story: with the backend's own table each pattern replaces its graph
    decomposed = [c.divergence for g in report.groups for c in g.unit
                  if c.divergence and c.divergence.mismatch and c.divergence.mismatch.cause == "decomposition"]
    assert len(decomposed) >= 12
    assert all(any("this pattern replaces this site" in e for e in d.mismatch.evidence) for d in decomposed)
    # layer norm: the graph takes item 0 of native_layer_norm, which the registered pattern holds decomposed
    for c in by_name["WanAdaLayerNormPatternGroup"].unit:
        assert "aten.native_layer_norm.default" in c.divergence.graph_node, c
        assert (c.divergence.mismatch.type, c.divergence.mismatch.cause) == (1, "decomposition"), c
    assert not report.passed


def test_compare_measures_cosine_and_errors():
    a = torch.tensor([1.0, 2.0, 3.0])
    same = compare(a, a.clone())
    assert same.cosine == pytest.approx(1.0) and same.max_abs == 0 and same.passed and same.upstream_gate
    flipped = compare(-a, a)
    assert flipped.cosine == pytest.approx(-1.0) and not flipped.passed and not flipped.upstream_gate
    assert flipped.max_abs == pytest.approx(6.0) and flipped.max_rel == pytest.approx(2.0)
    loose = compare(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]))  # cosine 0.707: upstream passes it
    assert loose.upstream_gate and not loose.passed
    nan = compare(torch.tensor([float("nan"), 1.0]), a[:2])
    assert not nan.passed and math.isnan(nan.cosine)
    assert compare((a, a * 2), (a, a * 2)).passed  # tuples / ModelOutput-like outputs are flattened


def test_example_inputs_shrink_only_what_cpu_cannot_hold(target):
    values, specs = example_inputs(_pattern(target, "WanAdaLayerNormPatternGroup",
                                            "WanAdaLayerNormPattern-torch.bfloat16"))
    x, scale, shift = specs
    assert x.declared == (1, 75600, 5120) and x.used[0] == 1 and x.used[2] == 5120
    assert math.prod(x.used) <= ELEMENT_BUDGET and scale.used == scale.declared == (1, 1, 5120)
    assert values[0].shape == x.used and values[0].dtype == torch.bfloat16
    gate_values, gate_specs = example_inputs(_pattern(target, "MiniMaxH3GatePatternGroup",
                                                      "MiniMaxH3GatePattern-torch.float32"))
    indices = gate_values[3]
    assert gate_specs[3].name == "indices" and indices.dtype == torch.int64 and int(indices.max()) < 3
