"""verify's model level on the zoo's tiny models: replacements where they land, type 7, errors as results."""

import pytest
import torch

from sdcompile.phases.verify.phase import run_verify

pytestmark = pytest.mark.slow


def test_wan_rmsnorm_replaces_every_qk_norm_of_tiny_wan(target, tmp_path):
    from sdcompile.phases.analyze.phase import analyze

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


def test_a_pattern_that_raises_inside_the_matcher_fails_its_group_not_the_tool(raising_tree, tmp_path):
    report = run_verify(repo=raising_tree, workdir=tmp_path, group="WanRmsNormPatternGroup", model="wan")
    group = report.groups[0]
    assert not report.passed and not group.passed
    assert group.model.error_source == "group" and "replacement broken on purpose" in group.model.error
    assert all(c.error and "replacement broken on purpose" in c.error for c in group.unit)


@pytest.mark.parametrize("wrong_gamma", ["dropped", "swapped"])
def test_a_replacement_with_the_wrong_gamma_fails_at_model_level(mindiesd_tree, tmp_path, wrong_gamma):
    """The zoo's norm weights are moved off 1 (each site its own), so a replacement that drops gamma, or swaps
    its channels (the same values, so the same statistics, on the wrong channels), still replaces every site but
    fails model-level numerics."""
    pattern = mindiesd_tree / "mindiesd/compilation/patterns/wan_rmsnorm_pattern.py"
    text = pattern.read_text()
    right = "torch_npu.npu_rms_norm(x, weight.to(x.dtype), epsilon=_eps_in_fp32)[0]"
    assert right in text
    wrong = {
        "dropped": "torch_npu.npu_rms_norm(x, torch.ones_like(weight, dtype=x.dtype), epsilon=_eps_in_fp32)[0]",
        "swapped": "torch_npu.npu_rms_norm(x, weight.flip(0).to(x.dtype), epsilon=_eps_in_fp32)[0]",
    }[wrong_gamma]
    pattern.write_text(text.replace(right, wrong))
    report = run_verify(repo=mindiesd_tree, workdir=tmp_path, group="WanRmsNormPatternGroup", model="flux")
    model = report.groups[0].model
    assert model.error is None and model.replacements == 6  # every site replaced, as with the right gamma
    assert not model.numerics.passed and not report.passed
    assert not model.numerics.within_tolerance and model.numerics.outside > 0


def test_the_right_gamma_passes_at_model_level(target, tmp_path):
    """The control for the test above: the same group, unedited, on the same perturbed model."""
    report = run_verify(repo=target.tree.root, workdir=tmp_path, group="WanRmsNormPatternGroup", model="flux")
    model = report.groups[0].model
    assert model.replacements == 6 and model.numerics.passed and model.numerics.outside == 0


def test_zoo_norm_weights_are_moved_off_their_init():
    from sdcompile.core.zoo.models import build_model

    built = build_model("flux")
    params = dict(built.module.named_parameters())
    assert len(built.perturbed) == 6 and all(name.endswith("norm_q.weight") or name.endswith("norm_k.weight")
                                             or "norm_added" in name for name in built.perturbed)
    gammas = [params[name].float() for name in built.perturbed]
    assert all(not bool((g == 1).all()) and bool((g > 0).all()) for g in gammas)
    assert len({tuple(g.tolist()) for g in gammas}) == len(gammas)  # each site its own gamma
    again = build_model("flux")
    assert all(torch.equal(p, q) for p, q in zip(built.module.parameters(), again.module.parameters(), strict=True))
