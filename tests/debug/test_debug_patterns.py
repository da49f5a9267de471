"""Patterns as register_replacement registered them; groups debugged against their own search functions; a pattern
file checked with --pattern-file."""

from __future__ import annotations

import pytest
from debug_helpers import DATA, MODULES, closest, only_group
from torch_ranges import behaviour_state

from sdcompile.core.torchcompat.behaviours import holds

pytestmark = pytest.mark.slow
# torch >= 2.12 registers patterns decomposed (inductor's table); expectations that differ branch on it
DECOMPOSITION_OVERRIDE = holds("decomposition-override")


def test_every_upstream_pattern_retraces_to_its_registered_entry(mindiesd_cache):
    """The search graph debug shows is the one registered: re-traced through torch's own gen_pattern_and_search_gm
    with the recorded registration call, its PatternExpr equals the entry in the pass's pattern dict."""
    import torch

    from sdcompile.core.graph.pattern_graph import call_for, record_registrations, trace_registered
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target

    mindiesd_target = load_target(find_target(mindiesd_cache))
    checked = 0
    for group in mindiesd_target.groups:
        if not group.loaded:
            continue
        with torch.no_grad(), mindiesd_target.session([group.group]) as session:
            with record_registrations() as calls:
                session.activate()
            entries = session.pattern_entries()
            for cls in mindiesd_target.pattern_classes(group.group):
                call = call_for(cls, calls)
                assert call is not None, cls.name()
                [entry] = entries[cls.name()]
                traced = trace_registered(cls.name(), call, entry)
                assert traced.same_as_registered is True, cls.name()
                assert call.trace_fn.__qualname__.endswith("fwd_only_with_custom_decomp")
                if DECOMPOSITION_OVERRIDE:  # the target's trace function, but register_replacement's own table
                    assert traced.decomposition_source.startswith(
                        "torch._inductor.decomposition.select_decomp_table")
                    assert traced.decompositions > 100
                else:  # register_replacement passes none: the trace function's own (empty) table
                    assert traced.decomposition_source.startswith(
                        "mindiesd.compilation._custom_decomposition.select_custom_decomp_table (the trace function's")
                    assert traced.decompositions == 0
                checked += 1
    assert checked >= 25


def test_search_graph_carries_the_pattern_source_lines(debug_runs):
    result = debug_runs(groups=("WanRmsNormPatternGroup",))
    [info] = result.groups
    pattern = info.patterns[0]
    assert "wan_rmsnorm_pattern.py" in pattern.source_file
    assert "add = torch.ops.aten.add.Scalar(mean, _eps_in_fp32)" in pattern.graph
    assert "CallFunction(aten.add.Scalar" in pattern.printed
    assert pattern.anchor == ("aten.mul.Tensor",)


def test_group_against_its_own_search_functions(debug_runs):
    result = debug_runs(groups=("WanRmsNormPatternGroup",))
    assert result.model == "unit" and result.passed
    assert {s.subject for s in result.sites} == {"unit WanRmsNormPattern-torch.bfloat16",
                                                "unit WanRmsNormPattern-torch.float32"}


def test_group_that_does_not_match_its_own_search_function(debug_runs):
    """RMSNormPatternGroup on torch >= 2.12: the first op where the registered pattern and the traced graph differ;
    before 2.12 it is registered as written and matches."""
    result = debug_runs(groups=("RMSNormPatternGroup",))
    if not DECOMPOSITION_OVERRIDE:
        assert result.passed and all(only_group(s).verdict == "matches" for s in result.sites)
        return
    assert not result.passed
    [site] = result.sites
    group = only_group(site)
    p = closest(group)
    assert (group.mismatch_type, p.mismatch.cause) == (1, "decomposition")
    assert p.first.field == "target"
    assert p.first.pattern.op == "prims.convert_element_type.default"
    assert p.first.model.op == "aten._to_copy.default"
    assert "rms_norm_pattern.py" in p.first.pattern.source
    # the fix is checked, not assumed: with the backend's own (empty) table the pattern replaces its unit
    assert any("select_custom_decomp_table (0 entries), this pattern replaces this site" in e
               for e in p.mismatch.evidence)


def test_item_of_a_multi_output_op_the_pattern_holds_decomposed(debug_runs):
    """WanAdaLayerNormPatternGroup on torch 2.13: the graph takes item 0 of native_layer_norm (no weight or bias, so
    literal Nones among its arguments), which register_replacement traced into var_mean / rsqrt / mul. Before
    torch 2.12 the pattern keeps native_layer_norm and matches."""
    result = debug_runs(groups=("WanAdaLayerNormPatternGroup",))
    assert len(result.sites) == 2
    if not DECOMPOSITION_OVERRIDE:
        assert result.passed
        return
    assert not result.passed
    for site in result.sites:
        p = closest(only_group(site))
        assert (p.mismatch.type, p.mismatch.cause) == (1, "decomposition"), p.first
        assert p.first.model.op == "aten.native_layer_norm.default"
        assert "item 0 of aten.native_layer_norm.default" in p.first.detail
        assert "the backend's graph keeps aten.native_layer_norm.default whole" in p.mismatch.fix
        assert any("this pattern replaces this site" in e for e in p.mismatch.evidence)


def test_pattern_file_with_the_proposed_fix(debug_runs):
    """debug proposes `use eps 1e-06` for type2; a pattern file written that way matches the same model."""
    pattern_file = DATA / "eps_literal_pattern.py"
    fixed = debug_runs(model_file=f"{MODULES}:type2", pattern_file=pattern_file)
    assert fixed.passed and fixed.op == "rmsnorm"
    [info] = fixed.groups
    assert info.group == "eps_literal_pattern" and info.model_hits == 1 and info.unit_hits == 1
    other = debug_runs(model_file=f"{MODULES}:type1", pattern_file=pattern_file)
    assert not other.passed and only_group(other.sites[0]).mismatch_type == 1


def test_ordering_conflict_with_the_backends_default_groups(debug_runs):
    """A new RoPE pattern file matches its model alone; registered after the target's groups (as the backend
    registers a group outside pattern_registry), WanResidualGatePattern takes the rope's final add first."""
    kwargs = {"model_file": f"{MODULES}:ordering", "pattern_file": DATA / "rotate_half_pattern.py", "dtype": "fp32"}
    alone = debug_runs(**kwargs)
    assert alone.passed and alone.registry_run is None
    together = debug_runs(registry_order=True, **kwargs)
    assert not together.passed
    run = together.registry_run
    assert run.groups[-1] == "rotate_half_pattern" and run.conflicts == 1
    assert run.replacements == {"WanResidualGatePatternGroup": 1}
    group = only_group(together.sites[0])
    assert (group.verdict, group.mismatch_type) == ("mismatch", 5)
    shown = closest(group)
    assert shown.mismatch.cause == "ordering"
    assert shown.mismatch.fix.startswith("WanResidualGatePatternGroup (position 11 of 17), registered earlier")


def test_a_cast_spelled_by_another_op_is_read_as_such(debug_runs):
    """A pattern written for torch_npu < 2.9 (its casts are npu._npu_dtype_cast) against a model casting with
    Tensor.to: it matches where the NPU traces Tensor.to that way; elsewhere each cast is paired with the model's
    aten._to_copy (type 3, `cast_op`) and everything around them lines up."""
    result = debug_runs(model_file=f"{MODULES}:type3", pattern_file=DATA / "npu_cast_rmsnorm_pattern.py")
    if "to-dtype-is-_npu_dtype_cast" in behaviour_state():
        assert result.passed and result.groups[0].model_hits == 1
        return
    assert not result.passed
    p = closest(only_group(result.sites[0]))
    assert (p.mismatch.type, p.mismatch.cause) == (3, "cast_op")
    assert (p.first.pattern.op, p.first.model.op) == ("npu._npu_dtype_cast.default", "aten._to_copy.default")
    assert "torch.ops.aten._to_copy.default(x, dtype=torch.bfloat16)" in p.mismatch.fix
    assert "mismatch_modules.py" in p.first.model.source and ".to(torch.bfloat16)" in p.first.model.source
    assert p.matched == p.total - 2  # the two casts differ; every other pattern op lines up
