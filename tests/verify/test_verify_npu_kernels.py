"""verify on the NPU's kernels: the tree's Triton branch runs under the interpreter, so a group that matches operands
its kernel refuses or misreads fails, naming the sites, the operands it bound and the fix."""

from pathlib import Path

import pytest

from sdcompile.core.npu.kernel_check import KernelVerdict
from sdcompile.phases.verify.phase import run_verify

pytestmark = pytest.mark.slow
DATA = Path(__file__).parent / "data"
GATES = DATA / "gated_residuals.py"
GROUP = "WanResidualGatePatternGroup"


def _not_passing(level):
    return [k for k in level.kernels if not k.passed]


def test_the_residual_gate_on_qwen_image_raises_on_the_npu_at_both_sites(target, tmp_path):
    report = run_verify(repo=target.tree.root, workdir=tmp_path, group=GROUP, model="qwenimage")
    group = report.groups[0]
    assert not report.passed and group.unit_passed and not group.model.passed
    assert group.model.error_source == "npu-kernel"  # the compiled model ran into the kernel too
    raising = _not_passing(group.model)
    assert {k.check.verdict for k in raising} == {KernelVerdict.RAISES}
    assert sorted(k.source.split(" in ")[0].rsplit(":", 1)[1] for k in raising) == ["724", "731"]
    assert all("x and y must have the same shape" in k.check.message for k in raising)
    assert all(k.pattern.startswith("WanResidualGatePattern") for k in raising)
    assert [o.shape for o in raising[0].check.operands] == [(1, 16, 64), (1, 1, 64), (1, 16, 64)]
    assert "raise on the NPU" in group.summary
    assert "interpreter" in report.npu_kernels


def test_the_residual_gate_on_wan_passes_and_says_where_it_falls_back(target, tmp_path):
    # Wan's own gates are [B,1,D]; the generic group also takes Wan's 4-D RoPE add(mul, mul), where the kernel falls
    # back to eager (its `fallback (ndim)` print): right, but no fused kernel there.
    report = run_verify(repo=target.tree.root, workdir=tmp_path, group=GROUP, model="wan")
    assert report.passed
    model = report.groups[0].model
    verdicts = {k.source.split(" in ")[1].split(":")[0]: k.check.verdict for k in model.kernels}
    assert verdicts == {"forward": KernelVerdict.PASSES, "apply_rotary_emb": KernelVerdict.FALLS_BACK}
    fell = [k for k in model.kernels if k.check.verdict is KernelVerdict.FALLS_BACK]
    assert all(k.check.message.startswith("[residual_gate_add] fallback (ndim)") for k in fell)


@pytest.mark.parametrize("factory, verdict", [("per_sample_gate", None), ("per_token_gate", KernelVerdict.DIFFERS),
                                              ("gate_first", KernelVerdict.RAISES)])
def test_residual_gates_as_models_write_them(target, tmp_path, factory, verdict):
    report = run_verify(repo=target.tree.root, workdir=tmp_path, group=GROUP, model_file=f"{GATES}:{factory}")
    model = report.groups[0].model
    assert model.replacements == 1
    assert report.passed is (verdict is None)
    assert [k.check.verdict for k in model.kernels] == [verdict or KernelVerdict.PASSES]
    if verdict is KernelVerdict.DIFFERS:  # the kernel reads the [B,S,D] gate as [B,1,D]: the model is wrong too
        assert model.kernels[0].check.worst.abs_error > 0.1 and not model.numerics.passed


def test_a_hand_written_scale_shift_pattern_with_broadcast_modulation_fails(mindiesd_tree, tmp_path):
    patterns = mindiesd_tree / "mindiesd/compilation/patterns"
    (patterns / "broadcast_scale_shift_pattern.py").write_text((DATA / "broadcast_scale_shift_pattern.py").read_text())
    with (patterns / "__init__.py").open("a") as init:
        init.write("\nfrom .broadcast_scale_shift_pattern import BroadcastScaleShiftPatternGroup\n")
    report = run_verify(repo=mindiesd_tree, workdir=tmp_path, group="BroadcastScaleShiftPatternGroup",
                        model_file=f"{GATES}:modulated", dtype="fp32")  # triton 3.5 interprets no bf16 constant
    group = report.groups[0]
    assert not report.passed and not group.unit_passed
    for level in (group.unit[0], group.model):
        (site,) = _not_passing(level)
        assert site.check.verdict is KernelVerdict.DIFFERS
        assert "scale_shift_kernel loads" in site.check.message and "past scale_ptr" in site.check.message
