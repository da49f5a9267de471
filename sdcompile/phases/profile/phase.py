"""`sdcompile profile`: run a tiny model eager or compiled and write a torch_npu-shaped profile folder, so phases
6-7 run end to end on any machine.

On CPU (the emulated NPU) the profile comes from torch.profiler and says so in the folder and the result; on a
real NPU it comes from torch_npu's profiler. `--backend` picks what compiles the model: only `default`
(MindieSDBackend) runs without the real NPU stack; the others need torch_npu and an NPU and exit 3 otherwise.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from sdcompile.catalogs import load
from sdcompile.core.environment import collect_versions
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.npu.probe import probe_all
from sdcompile.core.profiles.capture import (
    CPU_SOURCE,
    capture_cpu,
    remove_stale_staging,
    run_folder_name,
    staging_folder,
)
from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.locate import run_folders, written_by_sdcompile
from sdcompile.core.target.failures import describe_error
from sdcompile.core.zoo.model_step import ModelRequest, first_forward
from sdcompile.phases.choices import PROFILE_MODES
from sdcompile.phases.profile.results import ProfileReport
from sdcompile.phases.profile.warm_up import warm_up
from sdcompile.testing.model_runs import MAX_LEFT_OUT, first_compiled_call, to_device
from sdcompile.util.errors import BadInput, EnvironmentMissing, GateFailed, SdcompileError
from sdcompile.util.input_checks import name_max, reading, writable_dir
from sdcompile.workspace.locks import pair_folder_of, pair_lock

MODES = PROFILE_MODES
Progress = Callable[[str], None]


def backend_names() -> tuple[str, ...]:
    return tuple(b["name"] for b in load("backends")["backend"])


def check_backend(backend: str, real_stack: bool) -> None:
    """Exit 3 (EnvironmentMissing) when `backend` needs what this machine lacks; default runs emulated."""
    entries = {b["name"]: b for b in load("backends")["backend"]}
    if backend not in entries:
        from sdcompile.util.choices import UnknownChoice

        raise UnknownChoice("backend", backend, entries)
    if backend == "default" and not real_stack:
        return

    probes = probe_all()
    missing = [probes[name] for name in entries[backend]["requires"] if not probes[name].ok]
    if missing:
        raise EnvironmentMissing(
            f"--backend {backend} needs the real NPU stack: " + "; ".join(f"{p.name}: {p.detail}" for p in missing),
            "run on an Ascend host with torch_npu (and torchair / torch_npu >= 7.3 as the backend needs); "
            "here only --backend default runs, under the emulated NPU",
        )


def _prepare_out(out: Path, force: bool) -> None:
    remove_stale_staging(out)  # what an interrupted profile left: never a rank, so not the user's to remove
    runs = run_folders(out)
    if not runs:
        return
    foreign = [r for r in runs if not written_by_sdcompile(r)]
    if foreign:
        raise BadInput(f"{out} holds profiler output sdcompile did not write ({foreign[0].name})",
                       "choose an empty --out folder")
    if not force:
        raise BadInput(f"{out} already holds a profile ({runs[0].name}); integrate would read both as ranks",
                       "pass --force to replace it, or choose another --out folder")
    for run in runs:
        try:
            shutil.rmtree(run)
        except OSError as exc:
            raise BadInput(f"--out {out}: the old profile {run.name} cannot be removed ({exc.strerror or exc})",
                           "remove it yourself, or choose another --out folder") from exc


def _check_run_folder_name(label: str, out: Path) -> None:
    staged = staging_folder(out, run_folder_name(label)).name  # the longer of the two names the folder has
    size, limit = len(staged.encode("utf-8", "surrogateescape")), name_max(out)
    if size > limit:
        raise BadInput(f"--out {out}: the profile folder, named after the model ({label[:40]}…), would be {size} "
                       f"bytes, longer than a file name may be here ({limit})",
                       "shorten the model file's name or its factory's")


def run_profile(model: str | None, model_file: str | None, mode: str, out: Path, *, backend: str = "default",
                steps: int = 2, dtype: str = "bf16", repo: Path | None = None, plain_cpu: bool = False,
                force: bool = False, dry_run: bool = False, catalog_file: Path | None = None,
                progress: Progress = lambda _: None, timeout: float | None = None, build=None,
                leave_out: tuple[str, ...] = ()) -> ProfileReport:
    """Profile `steps` forwards of the model; its build and each forward may take `timeout` seconds (None:
    $SDCOMPILE_TIMEOUT, else 600; 0: no limit). A compile leaves out the target groups `leave_out` names."""

    if mode not in MODES:
        from sdcompile.util.choices import UnknownChoice

        raise UnknownChoice("--mode", mode, MODES, message=f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if steps < 1:
        raise BadInput(f"--steps {steps} must be at least 1", "profile one step or more")
    if mode == "eager" and backend != "default":
        raise BadInput("--backend applies to --mode compile only", "drop --backend for an eager profile")
    request = ModelRequest(model, model_file, build, dtype, timeout)
    spec = request.spec
    with reading(catalog_file, "--catalog"):
        catalog = load_catalog(catalog_file)
    out = writable_dir(out, "--out")  # before the model is built and profiled: the profile is written there last

    device = activate_for_command(plain_cpu)
    check_backend(backend, device.is_real)
    if not device.is_real:  # the CPU capture names its folder after the model: one too long fails only at the end
        _check_run_folder_name(f"{spec.name}-{mode}-cpu", out)
    backend_label = backend if mode == "compile" else "none"
    tree = None
    if mode == "compile" and backend in ("default", "aclgraph"):
        from sdcompile.core.target.discovery import find_target

        tree = find_target(repo)  # fail before building the model when there is no MindIE-SD tree
        if leave_out:  # and when a name to leave out is none of its groups or generated passes
            from sdcompile.core.target.loader import load_target
            from sdcompile.testing.model_runs import check_leave_out

            check_leave_out(load_target(tree), leave_out)
    versions = collect_versions(tree, device)
    if dry_run:
        return ProfileReport(spec.name, mode, backend_label, device.label, "dry run", str(out), "", 0, steps, 0.0,
                             None, (), True, (f"would profile {steps} step(s) of {spec.name} ({mode}) into {out}",),
                             versions)
    with _pair_guard(out):
        _prepare_out(out, force)

        progress(f"building {spec.name} ({dtype}) and running one forward")
        built, _output = first_forward(request)
        if device.is_real:
            from sdcompile.phases.profile.npu import profile_on_npu

            report = profile_on_npu(built, mode, backend, steps, out, repo, device, progress, leave_out)
        else:
            report = _profile_on_cpu(built, mode, steps, out, repo, device, catalog, progress, leave_out)
    return dataclasses.replace(report, versions=versions)


def _pair_guard(out: Path):
    """The workspace pair's lock when `out` is inside a pair's folder (run's own profiles are there): a profile
    written there while `sdcompile run` works on the pair would be read as a second rank."""
    from contextlib import nullcontext

    pair = pair_folder_of(out)
    return pair_lock(pair) if pair is not None else nullcontext()


class GroupRaised(GateFailed):
    """The compiled forward failed inside one pattern group of the tree (`group`): profiling without it is
    `--leave-out GROUP`."""

    def __init__(self, message: str, fix: str, group: str | None):
        super().__init__(message, fix)
        self.group = group


def _target_failed(built, error: str, group: str | None = None) -> GroupRaised:
    """A compiled forward that raised inside the target's backend (a pattern group failing in the matcher) is the
    tree's failure, not sdcompile's: one line naming the exception and the tree's file, exit 1."""
    fix = (f"fix that file, or profile without its group: --leave-out {group}" if group else
           "fix that file or turn its group off in the tree; `sdcompile integrate` without profiles shows the "
           "compile per layer")
    return GroupRaised(f"{built.label}: the compiled forward failed inside the target's backend: {error}", fix, group)


@contextmanager
def _target_failure(built, target):
    """Whatever a compiled forward raises, told as the target's (_target_failed)."""

    try:
        yield
    except SdcompileError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the target raises, told as the target's
        raise _target_failed(built, describe_error(exc, target.tree.root)) from exc


def _profile_on_cpu(built, mode, steps, out, repo, device, catalog, progress, leave_out=()) -> ProfileReport:
    import torch

    inputs = to_device(built.inputs, device.tensor_device)
    info = {"device": device.label, "model": built.label, "mode": mode, "dtype": built.dtype_name,
            "torch": torch.__version__, "backend": "default (MindieSDBackend)" if mode == "compile" else "none"}
    label = f"{built.name}-{mode}-cpu"
    notes = [f"CPU profile: {CPU_SOURCE}; durations are CPU times, not NPU times"]
    if mode == "eager":
        with torch.no_grad():
            with built.forward_deadline():
                built.module(**inputs)  # warm-up outside the profile, as a profiler schedule would
            progress(f"profiling {steps} eager step(s)")
            cap = capture_cpu(lambda: built.module(**inputs), steps, out, label, info, catalog)
        hits, counts = None, ()
    else:
        progress(f"compiling {built.label} through the target's MindieSDBackend")
        with first_compiled_call(built, repo, inputs, leave_out, retry_raising=False) as call:
            compiled, session, target = call.compiled, call.session, call.target
            if call.error:
                raise _target_failed(built, call.error, call.raising)
            with built.forward_deadline("compiled forward"), _target_failure(built, target):
                # outside the profile, after the first call
                warm_ups = 1 + warm_up(lambda: compiled(**inputs), compiles=True)
            hits, counts = session.replacements, tuple(session.pass_log_counts)
            info.update(target=str(target.tree.root), pattern_hits=hits, pass_log_counts=list(counts))
            progress(f"profiling {steps} compiled step(s)")
            cap = capture_cpu(lambda: compiled(**inputs), steps, out, label, info, catalog, session)
        notes.append(f"compiled with {len(session.groups)} pattern group(s) of {target.tree.root}: {hits} "
                     "replacement(s)")
        if leave_out:
            notes.append(f"compiled without {', '.join(leave_out)} (--leave-out)")
        if warm_ups > 1:
            notes.append(f"warmed up with {warm_ups} calls: the model compiled again after its first call (what it "
                         "caches on its first forward changes what dynamo guards on); the profile starts after that")
    return ProfileReport(built.label, mode, "default" if mode == "compile" else "none", device.label, CPU_SOURCE,
                         str(cap.run_dir), str(cap.kernel_details), cap.rows, steps, cap.seconds, hits, counts,
                         False, tuple(notes))


def profile_leaving_out_raising(model: str | None, model_file: str | None, mode: str, out: Path,
                                leave_out: tuple[str, ...] = (), progress: Progress = lambda _: None,
                                **options) -> tuple[bool, tuple[str, ...]]:
    """Profile as `run_profile` does, and when the compiled forward fails inside one group of the tree (a target
    group raising on this model, named with its switch by integrate), profile again without it, up to
    MAX_LEFT_OUT groups. Returns (whether a profile was written, the groups left out); a compile that fails
    otherwise is said through `progress` and returns False (integrate's layers say where)."""
    while True:
        try:
            run_profile(model, model_file, mode, out, leave_out=leave_out, progress=progress, **options)
            return True, leave_out
        except GroupRaised as failed:
            progress(failed.message)
            if not failed.group or failed.group in leave_out or len(leave_out) >= MAX_LEFT_OUT:
                return False, leave_out
            leave_out += (failed.group,)
        except GateFailed as failed:
            progress(failed.message)
            return False, leave_out
