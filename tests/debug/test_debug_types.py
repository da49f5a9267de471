"""One small module per mismatch type, each written against an upstream group that matches a module written like
its own search function on this torch; debug must name the type and the first differing node."""

from __future__ import annotations

import pytest
from debug_helpers import MODULES, closest, only_group
from torch_ranges import behaviour_state

pytestmark = pytest.mark.slow


def _mismatch(result):
    assert not result.passed
    [site] = [s for s in result.sites if s.verdict == "mismatch"]
    group = only_group(site)
    assert group.verdict == "mismatch"
    return group, closest(group)


def test_control_written_like_the_pattern_matches(case_run):
    result = case_run("control")
    assert result.passed, result.summary
    [site] = result.sites
    group = only_group(site)
    assert group.verdict == "matches"
    assert group.replaced_by == {"WanRmsNormPattern-torch.bfloat16": 1}
    shown = closest(group)
    assert shown.first is None and shown.mismatch is None
    assert shown.torch_says.startswith("accepts")
    assert result.groups[0].model_hits == 1


def test_type1_operator_overload(case_run):
    group, p = _mismatch(case_run("type1"))
    assert group.mismatch_type == 1 and p.mismatch.cause == "overload"
    assert p.first.field == "target"
    assert (p.first.pattern.op, p.first.model.op) == ("aten.add.Scalar", "aten.add.Tensor")
    assert "mismatch_modules.py" in p.first.model.source and "mean + EPS" in p.first.model.source
    assert "wan_rmsnorm_pattern.py" in p.first.pattern.source
    assert p.mismatch.fix.startswith("pattern uses aten.add.Scalar, model has aten.add.Tensor")
    assert p.torch_says.startswith("rejects: function_mismatch")


def test_type2_constant(case_run):
    group, p = _mismatch(case_run("type2"))
    assert group.mismatch_type == 2 and p.mismatch.cause == "eps"
    # the structure lines up; register_replacement's exact re-trace is where the constant differs
    assert p.first.stage == "exact" and p.first.field == "constant"
    assert p.first.model.text.endswith("aten.add.Scalar(mean, 1e-06)")
    assert p.first.pattern.text.endswith("aten.add.Scalar(mean, 9.999999974752427e-07)")
    assert "use eps 1e-06" in p.mismatch.fix
    assert "re-trace" in p.torch_says


def test_type3_cast_before_the_weight_multiply(case_run):
    group, p = _mismatch(case_run("type3"))
    assert group.mismatch_type == 3 and p.mismatch.cause == "extra_cast_in_model"
    assert p.first.kind == "extra in model"
    if "to-dtype-is-_npu_dtype_cast" in behaviour_state():  # torch_npu < 2.9: Tensor.to is its own cast
        assert p.first.model.op == "npu._npu_dtype_cast.default" and "torch.bfloat16" in p.first.model.text
    else:
        assert p.first.model.op == "aten._to_copy.default" and "dtype=torch.bfloat16" in p.first.model.text
    assert p.mismatch.fix.startswith("model casts to bf16 before the weight multiply")
    assert p.matched == p.total  # everything else lines up around the cast


def test_type4_extra_view(case_run):
    group, p = _mismatch(case_run("type4"))
    assert group.mismatch_type == 4 and p.mismatch.cause == "extra_view_in_model"
    assert p.first.model.op == "aten.view.default"
    assert ".view(-1, HIDDEN)" in p.first.model.source


def test_type5_intermediate_with_an_outside_user(case_run):
    group, p = _mismatch(case_run("type5"))
    assert group.mismatch_type == 5 and p.mismatch.cause == "external_users"
    assert p.first.field == "users"
    assert p.first.model.op == "aten.mul.Tensor" and "x * rsqrt" in p.first.model.source
    assert "add" in p.mismatch.fix
    assert p.torch_says.startswith("rejects: multiple_users")


def test_type6_frozen_constant_beside_a_site_that_matches(case_run):
    result = case_run("type6")
    assert result.stage == "after_freezing"
    verdicts = sorted(s.verdict for s in result.sites)
    assert verdicts == ["matches", "mismatch"]
    assert result.groups[0].model_hits == 1 and not result.groups[0].silent_miss
    group, p = _mismatch(result)
    assert group.mismatch_type == 6 and p.mismatch.path == "B"
    assert p.first.field == "node kind"
    assert p.first.pattern.op == "aten.unsqueeze.default"
    assert p.first.model.op.startswith("get_attr _frozen_param")
    assert "buffer freqs_" in p.first.model.holds  # what freeze() folded into the constant
    assert "match before freezing" in p.mismatch.fix and "scaffold --path graph-entry" in p.mismatch.fix
    assert "graph-pass" not in p.mismatch.fix  # custom passes are forbidden upstream: never the fix


def test_type7_unit_hits_model_misses(case_run):
    result = case_run("type7")
    info = result.groups[0]
    assert info.unit_hits >= 1 and info.model_hits == 0 and info.silent_miss
    assert info.model_hits_before_freezing == 1  # where the backend's own pass runs, the buffers still match
    group, p = _mismatch(result)
    assert group.mismatch_type == 7 and p.mismatch.cause == "silent_miss"
    assert p.first.model.op.startswith("get_attr _frozen_param")
    # the fix is carrier (a): the weight as a pattern input, matched before freezing — not a pass
    assert "register_replacement with the weight as a pattern input, matched before freezing" in p.mismatch.fix
    assert "graph-pass" not in p.mismatch.fix


@pytest.mark.parametrize("case", ["type6", "type7"])
def test_frozen_cases_match_where_the_pattern_pass_runs(case_run, case):
    """Before freezing (where MindieSDBackend's pattern pass runs) the buffers are placeholders: they match."""
    result = case_run(case, stage="before-freezing")
    assert result.passed, result.summary
    assert all(s.verdict == "matches" for s in result.sites)


def test_counts_equal_the_backends_own(case_run, pattern_session, npu_device):
    """Replacements of the pass applied to the captured before_freezing graph equal a real compile through the
    target's MindieSDBackend."""
    import importlib.util

    import torch


    spec = importlib.util.spec_from_file_location("mismatch_modules_for_counts", MODULES)
    modules = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(modules)
    for case in ("control", "type1", "type3"):
        result = case_run(case)
        module, inputs = getattr(modules, case)()
        module = module.to(torch.bfloat16)
        inputs = {k: v.to(torch.bfloat16) for k, v in inputs.items()}
        with torch.no_grad(), pattern_session("WanRmsNormPatternGroup") as session:
            session.activate()
            torch.compile(module, backend=session.backend())(**inputs)
            assert session.replacements == result.groups[0].model_hits, case
