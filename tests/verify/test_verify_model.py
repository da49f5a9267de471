"""verify's model level on the zoo's tiny models: replacements where they land, type 7, errors as results."""

import pytest

from sdcompile.phases.verify import run_verify

pytestmark = pytest.mark.slow


def test_wan_rmsnorm_replaces_every_qk_norm_of_tiny_wan(target, tmp_path):
    from sdcompile.phases.analyze import analyze

    analyze(model="wan", op="rmsnorm", workdir=tmp_path)  # phase 1 leaves analysis.json for the pair
    report = run_verify(repo=target.tree.root, workdir=tmp_path, model="wan", op="rmsnorm")  # derives the group
    group = report.groups[0]
    assert group.group == "WanRmsNormPatternGroup" and group.passed and report.passed
    m = group.model
    assert (m.model, m.dtype, m.graphs, m.error, m.mismatch_type) == ("wan", "bf16", 1, None, None)
    assert m.replacements == 4 and sum(m.pass_log_counts) == 4
    assert sorted(s.module_path for s in m.sites) == [
        "blocks.0.attn1.norm_k", "blocks.0.attn1.norm_q", "blocks.0.attn2.norm_k", "blocks.0.attn2.norm_q"]
    assert all("transformer_wan.py" in s.source for s in m.sites)
    assert m.numerics.passed
    assert sorted(m.analyzed_sites) == sorted(s.module_path for s in m.sites) and m.unreplaced_sites == ()
    state = (tmp_path / "wan" / "rmsnorm" / "state.json").read_text()
    assert '"verify"' in state and '"cpu (emulated npu)"' in state


def test_a_unit_hit_without_a_model_hit_is_mismatch_type_7(target, tmp_path):
    report = run_verify(repo=target.tree.root, workdir=tmp_path, group="MiniMaxH3RopePatternGroup", model="wan")
    group = report.groups[0]
    assert group.unit_passed and not group.passed and not report.passed
    assert group.model.replacements == 0 and group.model.mismatch_type == 7
    assert "sdcompile debug --model wan --group MiniMaxH3RopePatternGroup" in group.model.advice


def test_a_pattern_that_raises_inside_the_matcher_fails_its_group_not_the_tool(mindiesd_tree, tmp_path):
    pattern = mindiesd_tree / "mindiesd/compilation/patterns/wan_rmsnorm_pattern.py"
    text = pattern.read_text()
    marker = "            def func(x, weight):\n                # npu_rms_norm"
    assert marker in text
    pattern.write_text(text.replace(marker, "            raise ValueError('replacement broken on purpose')\n"
                                            + marker))
    report = run_verify(repo=mindiesd_tree, workdir=tmp_path, group="WanRmsNormPatternGroup", model="wan")
    group = report.groups[0]
    assert not report.passed and not group.passed
    assert group.model.error_source == "group" and "replacement broken on purpose" in group.model.error
    assert all(c.error and "replacement broken on purpose" in c.error for c in group.unit)
