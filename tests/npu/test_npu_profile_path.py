"""`sdcompile profile` on a real NPU (phases/profile/npu.py), run here with the one thing a machine without an NPU
lacks standing in: torch_npu's profiler, which writes its `*_ascend_pt` session folder when the profile ends. The
rest is real: the model, its forwards under --timeout, the staging folder and its publication."""

from __future__ import annotations

import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from sdcompile.core.profiles.locate import COMPLETE_MARKER, KERNEL_FILE, OUTPUT_DIR, STAGING_PREFIX, locate
from sdcompile.core.zoo.deadline import TimedOut, can_interrupt
from sdcompile.core.zoo.models import build_model, resolve_model

MODEL = '''
import time

import torch


class Block(torch.nn.Module):
    def __init__(self, hang_at):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.calls, self.hang_at = 0, hang_at

    def forward(self, x):
        self.calls += 1
        if self.calls == self.hang_at:
            time.sleep(30)
        return self.proj(x)


def build():
    return Block(hang_at=0), {"x": torch.randn(2, 8)}


def build_hanging():
    return Block(hang_at=2), {"x": torch.randn(2, 8)}  # the first profiled step, after the warm-up
'''


def _profiler_api(written: list[Path]) -> SimpleNamespace:
    """torch_npu.profiler's surface that profile_on_npu uses; the trace handler writes a session folder with a
    kernel_details.csv as torch_npu's text export does."""

    def tensorboard_trace_handler(folder: str):
        def write():
            session = Path(folder) / f"{socket.gethostname()}_{os.getpid()}_{time.time_ns() // 1000}_ascend_pt"
            (session / OUTPUT_DIR).mkdir(parents=True)
            (session / OUTPUT_DIR / KERNEL_FILE).write_text(
                "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"
                "0,aclnnMm_MatMulCommon_MatMulV2,MatMulV2,AI_CORE,1.0,2.5\n")
            written.append(session)
        return write

    @contextmanager
    def profile(on_trace_ready, **_config):
        yield SimpleNamespace(step=lambda: None)
        on_trace_ready()  # torch_npu writes the folder when the profile closes, not when it is cut short

    return SimpleNamespace(
        profile=profile, tensorboard_trace_handler=tensorboard_trace_handler,
        schedule=lambda **kw: kw, _ExperimentalConfig=lambda **kw: kw,
        ExportType=SimpleNamespace(Text="text"), ProfilerLevel=SimpleNamespace(Level1="level1"),
        ProfilerActivity=SimpleNamespace(CPU="cpu", NPU="npu"))


@pytest.fixture
def npu_profiler(monkeypatch):
    import torch_npu

    written: list[Path] = []
    monkeypatch.setattr(torch_npu, "profiler", _profiler_api(written), raising=False)
    return written


def _built(tmp_path: Path, factory: str, timeout: float):
    (tmp_path / "block.py").write_text(MODEL)
    return build_model(resolve_model(model_file=f"{tmp_path / 'block.py'}:{factory}"), "fp32", timeout=timeout)


def test_the_session_folder_is_published_complete_and_read_as_one_rank(tmp_path, npu_profiler):
    from sdcompile.phases.profile.npu import profile_on_npu

    out = tmp_path / "eager"
    device = SimpleNamespace(tensor_device="cpu", label="npu (stand-in profiler)")
    report = profile_on_npu(_built(tmp_path, "build", 60), "eager", "default", 2, out, None, device, lambda _: None)
    (session,) = out.iterdir()
    assert session.name == npu_profiler[0].name and (session / COMPLETE_MARKER).is_file()
    assert report.rows == 1 and report.kernel_details == str(session / OUTPUT_DIR / KERNEL_FILE)
    assert [r.label for r in locate(out).ranks] == [session.name]


@pytest.mark.skipif(not can_interrupt(), reason="the deadline needs POSIX signals on the main thread")
def test_a_forward_past_the_timeout_ends_the_profile_and_leaves_no_folder(tmp_path, npu_profiler):
    from sdcompile.phases.profile.npu import profile_on_npu

    out = tmp_path / "eager"
    device = SimpleNamespace(tensor_device="cpu", label="npu (stand-in profiler)")
    started = time.monotonic()
    with pytest.raises(TimedOut, match="block.py:build_hanging"):
        profile_on_npu(_built(tmp_path, "build_hanging", 1), "eager", "default", 2, out, None, device, lambda _: None)
    assert time.monotonic() - started < 20
    assert npu_profiler == [] and list(out.iterdir()) == []  # the staging folder went with it
    assert not any(p.name.startswith(STAGING_PREFIX) for p in tmp_path.rglob("*"))


def test_a_compiled_profile_records_the_fused_calls_its_graphs_made(tmp_path, npu_profiler, mindiesd_tree):
    """What benefit's R4 weighs fused launches against: the calls the compiled regions made in the profiled steps
    (2 norms a run, 2 steps), written beside torch_npu's folder; the rows are the device's, not tied to nodes."""
    from sdcompile.core.profiles.graph_sites import read_graph_sites
    from sdcompile.phases.profile.npu import profile_on_npu

    model = Path(__file__).parents[1] / "benefit" / "data" / "recompiling_model.py"
    built = build_model(resolve_model(model_file=f"{model}:build"), "bf16", timeout=120)
    device = SimpleNamespace(tensor_device="cpu", label="npu (stand-in profiler)")
    out = tmp_path / "compiled"
    profile_on_npu(built, "compile", "default", 2, out, mindiesd_tree, device, lambda _: None)
    (session,) = out.iterdir()
    sites = read_graph_sites(session)
    assert sites.steps == 2 and dict(sites.fused_calls) == {"RmsNorm": 4} and not sites.nodes
