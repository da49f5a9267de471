"""`sdcompile doctor`: this environment's versions, the device commands would use, and the version-dependent
behaviours of torch and torch_npu that apply here.

Never refuses an unsupported torch (it is the command that explains one): torch is imported, to probe its
behaviours, only when it is installed and supported.
"""

from __future__ import annotations

import os
from pathlib import Path

from sdcompile.core.environment import Versions, collect_versions, npu_behaviours
from sdcompile.core.npu.device import ENV_MODE, LABELS
from sdcompile.core.npu.emulation.triton_runtime import installed_triton
from sdcompile.core.npu.probe import probe_all
from sdcompile.core.target.discovery import find_target
from sdcompile.core.torchcompat.behaviours import behaviours
from sdcompile.core.torchcompat.support import SUPPORTED_TORCH, torch_support
from sdcompile.phases.doctor.results import BehaviourRow, DoctorDevice, DoctorReport, DoctorTarget, Problem
from sdcompile.util.errors import NotATarget


def torch_requirement() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_TORCH
    return f"torch>={lo_major}.{lo_minor},<{hi_major}.{hi_minor + 1}"


def _device(problems: list[Problem]) -> DoctorDevice:
    """The device `auto` (or $SDCOMPILE_DEVICE) would activate, found by probing without activating."""

    requested = os.environ.get(ENV_MODE, "auto")
    if requested in ("emulated", "plain-cpu"):
        return DoctorDevice(LABELS[requested], requested, f"${ENV_MODE}={requested}")
    probes = probe_all()
    if probes["torch_npu"].ok and probes["npu_device"].ok:
        return DoctorDevice(LABELS["npu"], "npu", f"torch_npu with {probes['npu_device'].detail}")
    if probes["torch_npu"].detail == "torch_npu is not installed":
        return DoctorDevice(LABELS["emulated"], "emulated", "no torch_npu installed: the NPU is emulated on CPU")
    failing = probes["torch_npu"] if not probes["torch_npu"].ok else probes["npu_device"]
    problems.append(Problem("torch-npu-unusable", failing.detail))
    return DoctorDevice(LABELS["emulated"], "emulated", f"{failing.detail}; commands stop unless "
                        f"{ENV_MODE}=emulated")


def _torch_rows() -> list[BehaviourRow]:
    return [BehaviourRow(b.key, "torch", b.torch_range, b.holds, b.effect, b.seen) for b in behaviours()]


def _npu_rows(versions: Versions) -> list[BehaviourRow]:
    return [BehaviourRow(b.key, "torch_npu", b.torch_npu_range, b.applies, b.effect, b.seen)
            for b in npu_behaviours(versions.torch_npu_version)]


def run_doctor(repo: Path | str | None = None) -> DoctorReport:
    problems: list[Problem] = []
    target, target_error = None, None
    try:
        tree = find_target(repo)
        target = DoctorTarget(str(tree.root), tree.version, tree.found_by)
    except NotATarget as exc:
        if repo is not None:  # an explicit tree that is not one is bad input, as in every other command
            raise
        tree, target_error = None, exc.one_line()
    # the accepted range is the tree's plugin variants (MindIE-SD 3.1.0's without a tree)
    support = torch_support(root=tree.root if tree else None)
    if support.version is None:
        problems.append(Problem("torch-missing", ""))
    elif not support.supported:
        problems.append(Problem("torch-unsupported", support.version))
    device = _device(problems)
    versions = collect_versions(tree)
    if versions.diffusers_version is None:
        problems.append(Problem("diffusers-missing", ""))
    rows = (_torch_rows() if support.supported else []) + _npu_rows(versions)
    return DoctorReport(versions=versions, torch_supported=support.supported, torch_range=support.range_text,
                        torch_requirement=support.install_spec, device=device, target=target,
                        target_error=target_error, behaviours=tuple(rows), torch_behaviours_probed=support.supported,
                        problems=tuple(problems), ok=not problems, triton=_triton(),
                        torch_range_from=support.variants.source, torch_range_problem=support.variants.problem,
                        torch_tested=support.tested, torch_untested=support.untested,
                        torch_declared=torch_requirement())


def _triton() -> str | None:
    found = installed_triton()
    return f"{found[0]} {found[1]}" if found else None
