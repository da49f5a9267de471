"""debug shows, beside its site table, how the fused calls a group's pass put in the model run on the NPU's kernel."""

import pytest

from sdcompile.core.npu.kernel_check import KernelVerdict

pytestmark = pytest.mark.slow


def test_the_residual_gates_calls_on_qwen_image_raise_on_the_npu_kernel(mindiesd_tree, tmp_path):
    from sdcompile.phases.debug.phase import run_debug

    result = run_debug(model="qwenimage", op="rmsnorm", groups=("WanResidualGatePatternGroup",), repo=mindiesd_tree,
                       workdir=tmp_path)
    (group,) = result.groups
    assert group.model_hits == 2
    assert {k.check.verdict for k in group.kernels} == {KernelVerdict.RAISES}
    assert sorted(k.source.split(" in ")[0].rsplit(":", 1)[1] for k in group.kernels) == ["724", "731"]
    assert all("x and y must have the same shape" in k.check.message for k in group.kernels)
