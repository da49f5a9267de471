"""Device modes: what diffusers and the target see in each, and the order rules that keep them consistent."""

import importlib.metadata
import importlib.util
import json
import tomllib
from pathlib import Path

import pytest
from npu_processes import REPO_ROOT, make_fake_real_stack, run_python

from sdcompile.core.npu.device import DeviceModeConflict, activate, current
from sdcompile.core.npu.emulation import STANDIN_DIR, is_standin_origin
from sdcompile.util.errors import BadInput


@pytest.fixture
def fake_real_stack(tmp_path):
    return make_fake_real_stack(tmp_path / "fake_stack")


def test_this_suite_runs_on_the_emulated_npu():
    info = current()
    assert (info.mode, info.label, info.model_sees_npu, info.fused_ops) == (
        "emulated", "cpu (emulated npu)", True, "emulated")
    assert activate("emulated") is info and activate("auto") is info  # idempotent; auto keeps what is active


def test_switching_mode_in_a_process_is_refused():
    with pytest.raises(DeviceModeConflict, match="already runs with device mode 'emulated'"):
        activate("plain-cpu")
    with pytest.raises(BadInput, match="unknown device mode"):
        activate("tpu")


def test_standin_torch_npu_satisfies_find_spec_and_metadata():
    spec = importlib.util.find_spec("torch_npu")
    assert spec is not None and is_standin_origin(spec.origin)
    version = importlib.metadata.version("torch_npu")
    # the torch_npu paired with the installed torch: torch_npu X.Y goes with torch X.Y
    release = ".".join(importlib.metadata.version("torch").split("+")[0].split(".")[:3])
    assert version == f"{release}+sdcompile.emulated"
    assert current().torch_npu_version == version
    import torch_npu

    assert torch_npu.__version__ == version


def test_torch_npu_namespace_claims_a_device_but_no_npu_graphs():
    import torch

    assert torch.npu.is_available() and torch.npu.device_count() == 1
    assert not hasattr(torch.npu, "NPUGraph")  # MindIE-SD's aclgraph backend must stay unselected
    import torch_npu

    assert torch_npu.npu_rms_norm is torch.ops.npu.npu_rms_norm


def test_diffusers_sees_an_npu_host_and_traces_the_fused_rms_norm():
    import torch
    from diffusers.models.normalization import RMSNorm
    from diffusers.utils import is_torch_npu_available
    from torch.fx.experimental.proxy_tensor import make_fx

    assert is_torch_npu_available()
    norm = RMSNorm(16, eps=1e-6).to(torch.bfloat16)
    gm = make_fx(norm)(torch.randn(1, 4, 16, dtype=torch.bfloat16))
    targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert "npu.npu_rms_norm.default" in targets and "aten.rsqrt.default" not in targets


def test_diffusers_computes_in_the_dtypes_of_an_npu_host():
    """diffusers downcasts float64 to float32 on NPU tensors (maybe_adjust_dtype_for_device): AnyFlow's rotation then
    runs in complex64, as on an Ascend host, where a CPU process computes it in complex128 (see the plain-CPU test)."""
    import torch
    from diffusers.models.transformers.transformer_anyflow import apply_rotary_emb
    from diffusers.utils.torch_utils import maybe_adjust_dtype_for_device
    from torch.fx.experimental.proxy_tensor import make_fx

    cpu = torch.device("cpu")
    assert maybe_adjust_dtype_for_device(torch.float64, cpu) == torch.float32
    assert maybe_adjust_dtype_for_device(torch.int64, cpu) == torch.int32
    assert maybe_adjust_dtype_for_device(torch.bfloat16, cpu) == torch.bfloat16
    angles = torch.outer(torch.arange(4.0), 1.0 / 10000 ** (torch.arange(0, 8, 2) / 8))
    freqs = torch.polar(torch.ones_like(angles), angles)  # [S, D/2] complex64
    gm = make_fx(apply_rotary_emb)(torch.randn(1, 2, 4, 8, dtype=torch.bfloat16), freqs)
    dtypes = {n.meta["val"].dtype for n in gm.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)}
    assert torch.complex64 in dtypes and not dtypes & {torch.float64, torch.complex128}


def test_standin_files_are_package_data():
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = data["sdcompile.core.npu.emulation"]
    shipped = {p for g in globs for p in (REPO_ROOT / "sdcompile/core/npu/emulation").glob(g)}
    on_disk = {p for p in STANDIN_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert on_disk and on_disk <= shipped


PLAIN_CPU = """
    import json, torch
    from sdcompile.core.npu.device import activate
    info = activate("plain-cpu")
    from diffusers.models.normalization import RMSNorm
    from diffusers.utils import is_torch_npu_available
    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(RMSNorm(16, eps=1e-6))(torch.randn(1, 4, 16))
    import torch_npu  # the target's pattern files still import it
    from diffusers.utils.torch_utils import maybe_adjust_dtype_for_device
    print(json.dumps({"label": info.label, "diffusers_npu": is_torch_npu_available(),
                      "rope_dtype": str(maybe_adjust_dtype_for_device(torch.float64, torch.device("cpu"))),
                      "targets": sorted({str(n.target) for n in gm.graph.nodes if n.op == "call_function"}),
                      "torch_npu_ok": torch.npu.is_available() and hasattr(torch_npu, "npu_rms_norm")}))
"""


def test_plain_cpu_traces_what_a_machine_without_npu_traces():
    proc = run_python(PLAIN_CPU)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["label"] == "cpu" and out["diffusers_npu"] is False and out["torch_npu_ok"]
    assert "aten.rsqrt.default" in out["targets"] and "npu.npu_rms_norm.default" not in out["targets"]
    assert out["rope_dtype"] == "torch.float64"  # a CPU process's dtypes: the NPU's are emulated only as an NPU


@pytest.mark.torch_independent  # the order of imports
def test_emulation_after_diffusers_was_imported_is_refused_with_the_reason():
    proc = run_python("""
        import diffusers
        from sdcompile.core.npu.device import activate
        activate("emulated")
    """)
    assert proc.returncode != 0
    assert "DeviceModeConflict" in proc.stderr and "decided this is not an NPU host" in proc.stderr


def test_asking_for_a_real_npu_without_one_is_environment_missing():
    proc = run_python("""
        from sdcompile.core.npu.device import activate
        try:
            activate("npu")
        except Exception as exc:
            print(type(exc).__name__, exc.exit_code, exc.message)
    """)
    assert proc.stdout.startswith("EnvironmentMissing 3 a real NPU was requested but torch_npu is not installed")


REAL_PROBE = """
    import json
    from sdcompile.core.npu.device import activate
    info = activate("auto")
    print(json.dumps({"mode": info.mode, "label": info.label, "fused_ops": info.fused_ops,
                      "tensor_device": info.tensor_device, "version": info.torch_npu_version,
                      "reason": info.reason}))
"""


@pytest.mark.torch_independent  # choosing the device
def test_auto_selects_the_real_stack_when_torch_npu_imports_and_a_device_is_available(fake_real_stack):
    proc = run_python(REAL_PROBE, env={"PYTHONPATH": str(fake_real_stack), "SDCOMPILE_NPU_DEVICE": "cpu"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"mode": "npu", "label": "npu", "fused_ops": "real", "tensor_device": "cpu",
                   "version": "2.13.0.post1", "reason": "torch_npu 2.13.0.post1 with 2 NPU device(s)"}


@pytest.mark.torch_independent  # choosing the device
def test_auto_with_torch_npu_but_no_device_says_how_to_emulate(tmp_path):
    stack = make_fake_real_stack(tmp_path / "stack", available=False)
    proc = run_python("""
        from sdcompile.core.npu.device import activate
        try:
            activate("auto")
        except Exception as exc:
            print(type(exc).__name__, exc.one_line())
    """, env={"PYTHONPATH": str(stack)})
    assert proc.stdout.startswith("EnvironmentMissing torch_npu imports but no NPU is usable"), proc.stderr
    assert "set SDCOMPILE_DEVICE=emulated" in proc.stdout


@pytest.mark.torch_independent  # choosing the device
def test_emulated_mode_shadows_an_installed_torch_npu(tmp_path):
    stack = make_fake_real_stack(tmp_path / "stack", available=False)
    proc = run_python("""
        from sdcompile.core.npu.device import activate
        info = activate("emulated")
        import importlib.metadata, torch_npu
        print(info.label, torch_npu.__version__, importlib.metadata.version("torch_npu"))
    """, env={"PYTHONPATH": str(stack)})
    assert proc.returncode == 0, proc.stderr
    from sdcompile.core.npu.emulation.behaviours import emulated_torch_npu_version

    version = emulated_torch_npu_version()  # not the installed 2.13.0.post1 dist-info's
    assert proc.stdout.strip() == f"cpu (emulated npu) {version} {version}"


@pytest.mark.torch_independent  # choosing the device
def test_probe_ignores_the_standin_but_sees_a_real_install(fake_real_stack):
    from sdcompile.core.npu.probe import probe_all

    assert probe_all()["torch_npu"].ok is False  # this process has only the stand-in
    proc = run_python("from sdcompile.core.npu.probe import probe_all; p = probe_all(); "
                      "print(p['torch_npu'].ok, p['npu_device'].ok)", env={"PYTHONPATH": str(fake_real_stack)})
    assert proc.stdout.split() == ["True", "True"], proc.stderr
    assert Path(STANDIN_DIR).is_dir()
