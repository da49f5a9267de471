"""`sdcompile profile` on a real Ascend NPU: torch_npu's own profiler (text export, Level1) writes the
`*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv` folder; the backend compiles the model first.

On machines without an NPU only its own logic is exercised (tests/npu/test_npu_profile_path.py: forwards under
--timeout, the staging folder and its publication), with a stand-in for torch_npu's profiler; the CPU path in
capture.py is what profiles there. It uses only documented torch_npu, torchair and MindIE-SD entry points
(catalogs/backends.toml).
"""

from __future__ import annotations

import shutil
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from sdcompile.core.profiles.capture import fused_kernel_calls, publish, staging_folder
from sdcompile.core.profiles.graph_sites import write_graph_sites
from sdcompile.core.profiles.locate import KERNEL_FILE, OUTPUT_DIR, RUN_SUFFIX
from sdcompile.phases.profile.results import ProfileReport
from sdcompile.phases.profile.warm_up import warm_up
from sdcompile.testing.model_runs import to_device

NPU_SOURCE = "npu profile (torch_npu profiler via sdcompile profile)"


def _compiled(built, backend: str, repo, stack: ExitStack, leave_out: tuple[str, ...] = ()):
    import torch

    if backend == "default" or backend == "aclgraph":
        from sdcompile.testing.model_runs import compiled_model

        compiled, session, target = stack.enter_context(compiled_model(built, repo, leave_out))
        if backend == "aclgraph":  # MindIE-SD's own switch (copy-audit's remedy C): compile, then capture the
            # graph with torch.npu.NPUGraph; aclgraph_with_compile keeps the fusion patterns (aclgraph_only would not)
            config = sys.modules["mindiesd.compilation.compiliation_config"].CompilationConfig
            saved = config.aclgraph_with_compile
            config.aclgraph_with_compile = True
            stack.callback(setattr, config, "aclgraph_with_compile", saved)
        return compiled, session
    if backend == "torchair_ge":
        try:
            import torchair
        except ImportError:
            from torch_npu.dynamo import torchair
        config = torchair.CompilerConfig()
        config.mode = "max-autotune"
        return torch.compile(built.module, backend=torchair.get_npu_backend(compiler_config=config),
                             dynamic=False), None
    return torch.compile(built.module, backend="npugraph_ex", dynamic=False), None


def profile_on_npu(built, mode: str, backend: str, steps: int, out: Path, repo, device, progress,
                   leave_out: tuple[str, ...] = ()):
    import torch_npu

    module = built.module.to(device.tensor_device)
    inputs = to_device(built.inputs, device.tensor_device)
    prof_api = torch_npu.profiler
    experimental = prof_api._ExperimentalConfig(export_type=prof_api.ExportType.Text,
                                                profiler_level=prof_api.ProfilerLevel.Level1)
    # torch_npu writes its session folder into a staging folder; each is marked complete and renamed into `out`
    # once the profiler has finished it (capture.publish), so a profile cut short is never read as a rank.
    staging = staging_folder(out, "npu")
    staging.mkdir(parents=True)
    try:
        session, seconds = _profile_into(staging, built, module, inputs, mode, backend, steps, repo, prof_api,
                                         experimental, progress, leave_out)
        runs = sorted(staging.glob(f"*{RUN_SUFFIX}"), key=lambda p: p.stat().st_mtime)
        for run in runs if session is not None else ():  # what the compiled graphs made fused (benefit's R4)
            write_graph_sites(run, steps, fused_kernel_calls(session.fused_calls_run))
        runs = [publish(run, Path(out) / run.name) for run in runs]
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    kernel_file = runs[-1] / OUTPUT_DIR / KERNEL_FILE if runs else Path(out) / KERNEL_FILE
    rows = max(sum(1 for _ in kernel_file.open(encoding="utf-8", errors="replace")) - 1, 0) \
        if kernel_file.is_file() else 0
    hits = session.replacements if session is not None else None
    counts = tuple(session.pass_log_counts) if session is not None else ()
    return ProfileReport(built.label, mode, backend if mode == "compile" else "none", device.label, NPU_SOURCE,
                         str(kernel_file.parent.parent), str(kernel_file), rows, steps, seconds, hits, counts, False,
                         ())


def _profile_into(folder: Path, built, module, inputs, mode, backend, steps, repo, prof_api, experimental, progress,
                  leave_out: tuple[str, ...] = ()):
    """Profile `steps` forwards with torch_npu's profiler writing into `folder`: (the compile session, seconds)."""
    import torch

    with ExitStack() as stack, torch.no_grad():
        session = None
        fn = module
        if mode == "compile":
            fn, session = _compiled(built, backend, repo, stack, leave_out)
        stage = "compiled forward" if mode == "compile" else "forward"
        with built.forward_deadline(stage):  # each forward, to the end of its kernels
            warm_up(lambda: fn(**inputs), compiles=mode == "compile")  # outside the profile
            torch.npu.synchronize()
        progress(f"profiling {steps} {mode} step(s) on the NPU")
        if session is not None:
            session.fused_calls_run.clear()  # the warm-up's calls are not the profile's
        started = time.perf_counter()
        with prof_api.profile(
            activities=[prof_api.ProfilerActivity.CPU, prof_api.ProfilerActivity.NPU],
            schedule=prof_api.schedule(wait=0, warmup=0, active=steps, repeat=1),
            on_trace_ready=prof_api.tensorboard_trace_handler(str(folder)),
            experimental_config=experimental,
        ) as prof:
            for _ in range(steps):
                with built.forward_deadline(stage):
                    fn(**inputs)
                    torch.npu.synchronize()
                prof.step()
        return session, time.perf_counter() - started
