"""The pytest plugin runs upstream-style pattern tests on the emulated NPU inside a target checkout."""

import subprocess
import sys
import textwrap

UPSTREAM_STYLE = '''
import torch
import torch.nn.functional as F

from mindiesd.compilation import MindieSDBackend


class WanQkNorm(torch.nn.Module):
    def forward(self, x, weight):
        variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        rsqrt = torch.ops.aten.rsqrt.default(torch.ops.aten.add.Scalar(mean, 9.999999974752427e-07))
        return x * rsqrt * weight


def _inputs(device):
    return (torch.randn(1, 16, 128, dtype=torch.bfloat16, device=device),
            torch.randn(128, dtype=torch.bfloat16, device=device))


def test_with_only_the_wan_group(pattern_session, npu_tensor_device, npu_device):
    assert npu_device.label == "cpu (emulated npu)" and npu_tensor_device == "cpu"
    x, w = _inputs(npu_tensor_device)
    with torch.no_grad(), pattern_session("WanRmsNormPatternGroup") as s:
        out = torch.compile(WanQkNorm(), backend=s.backend())(x, w)
        assert s.replacements == 1 and s.pass_log_counts == [1]
    cos = F.cosine_similarity(out.float().reshape(1, -1), WanQkNorm()(x, w).float().reshape(1, -1))[0]
    assert cos > 0.999


def test_upstream_backend_with_every_group_enabled(npu_tensor_device):
    x, w = _inputs(npu_tensor_device)
    with torch.no_grad():
        out = torch.compile(WanQkNorm(), backend=MindieSDBackend())(x, w)
    cos = F.cosine_similarity(out.float().reshape(1, -1), WanQkNorm()(x, w).float().reshape(1, -1))[0]
    assert cos > 2**-7
'''


def test_plugin_runs_upstream_style_tests_in_a_target_checkout(mindiesd_tree):
    tests = mindiesd_tree / "tests" / "compilation"
    tests.mkdir(parents=True)
    (tests / "test_wan_rmsnorm_emulated.py").write_text(textwrap.dedent(UPSTREAM_STYLE))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "sdcompile.testing.pytest_plugin", "-p", "no:cacheprovider",
         "--rootdir", str(mindiesd_tree), str(tests)],
        cwd=mindiesd_tree, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    assert "sdcompile device: cpu (emulated npu)" in proc.stdout
    assert f"sdcompile target: {mindiesd_tree} (stand-in package)" in proc.stdout
