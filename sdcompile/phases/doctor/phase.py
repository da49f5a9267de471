"""`sdcompile doctor`: this environment's versions, the device commands would use, and the version-dependent
behaviours of torch and torch_npu that apply here.

Never refuses an unsupported torch (it is the command that explains one): torch is imported, to probe its
behaviours, only when it is installed and supported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.environment import Versions, collect_versions, npu_behaviours
from sdcompile.core.target.discovery import find_target
from sdcompile.core.torchcompat.support import SUPPORTED_TORCH, torch_support
from sdcompile.util.errors import NotATarget


@dataclass(frozen=True)
class DoctorTarget:
    root: str
    version: str  # "unknown" when neither the tree nor a dist-info beside it names one
    found_by: str


@dataclass(frozen=True)
class DoctorDevice:
    label: str  # what commands would record as `device`: "npu", "cpu (emulated npu)" or "cpu"
    mode: str  # "npu", "emulated" or "plain-cpu"
    reason: str


@dataclass(frozen=True)
class BehaviourRow:
    key: str
    package: str  # "torch" or "torch_npu"
    version_range: str  # where it holds: ">=2.12" (torch) or ">=2.7,<2.9" (torch_npu)
    holds: bool  # for the installed torch (probed) or this process's torch_npu
    effect: str  # what it changes here (or what holds instead)
    seen: str


@dataclass(frozen=True)
class Problem:
    key: str  # "torch-missing", "torch-unsupported", "diffusers-missing", "torch-npu-unusable"
    detail: str  # the version or the probe's own words


@dataclass(frozen=True)
class DoctorReport:
    versions: Versions
    torch_supported: bool
    torch_range: str  # "2.7 to 2.13"
    torch_requirement: str  # "torch>=2.7,<2.14", for the fix
    device: DoctorDevice
    target: DoctorTarget | None
    target_error: str | None  # why no tree is shown, when --repo was not given
    behaviours: tuple[BehaviourRow, ...]
    torch_behaviours_probed: bool  # False when torch is missing or unsupported (then only torch_npu's are listed)
    problems: tuple[Problem, ...]
    ok: bool  # no problem: every command can run here


def torch_requirement() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_TORCH
    return f"torch>={lo_major}.{lo_minor},<{hi_major}.{hi_minor + 1}"


def _device(problems: list[Problem]) -> DoctorDevice:
    """The device `auto` (or $SDCOMPILE_DEVICE) would activate, found by probing without activating."""
    from sdcompile.core.npu.device import ENV_MODE, LABELS
    from sdcompile.core.npu.probe import probe_all

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
    from sdcompile.core.torchcompat.behaviours import behaviours

    return [BehaviourRow(b.key, "torch", b.torch_range, b.holds, b.effect, b.seen) for b in behaviours()]


def _npu_rows(versions: Versions) -> list[BehaviourRow]:
    return [BehaviourRow(b.key, "torch_npu", b.torch_npu_range, b.applies, b.effect, b.seen)
            for b in npu_behaviours(versions.torch_npu_version)]


def run_doctor(repo: Path | str | None = None) -> DoctorReport:
    problems: list[Problem] = []
    support = torch_support()
    if support.version is None:
        problems.append(Problem("torch-missing", ""))
    elif not support.supported:
        problems.append(Problem("torch-unsupported", support.version))
    target, target_error = None, None
    try:
        tree = find_target(repo)
        target = DoctorTarget(str(tree.root), tree.version, tree.found_by)
    except NotATarget as exc:
        if repo is not None:  # an explicit tree that is not one is bad input, as in every other command
            raise
        tree, target_error = None, exc.one_line()
    device = _device(problems)
    versions = collect_versions(tree)
    if versions.diffusers_version is None:
        problems.append(Problem("diffusers-missing", ""))
    rows = (_torch_rows() if support.supported else []) + _npu_rows(versions)
    return DoctorReport(versions=versions, torch_supported=support.supported, torch_range=support.range_text,
                        torch_requirement=torch_requirement(), device=device, target=target,
                        target_error=target_error, behaviours=tuple(rows), torch_behaviours_probed=support.supported,
                        problems=tuple(problems), ok=not problems)
