"""What `sdcompile doctor` returns: versions, device, target, the behaviours that apply and the problems."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions


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
    torch_range: str  # the releases with a MindIE-SD plugin variant: "2.7, 2.9 to 2.13"
    torch_requirement: str  # "torch==2.13.*": the newest tested release the tree has a variant for, for the fix
    device: DoctorDevice
    target: DoctorTarget | None
    target_error: str | None  # why no tree is shown, when --repo was not given
    behaviours: tuple[BehaviourRow, ...]
    torch_behaviours_probed: bool  # False when torch is missing or unsupported (then only torch_npu's are listed)
    problems: tuple[Problem, ...]
    ok: bool  # no problem: every command can run here
    # The Triton that runs the target's NPU kernels under emulation ("triton 3.9.0"), None when none is installed
    # (the tree's CPU fallback runs then); read from package metadata, nothing imported
    triton: str | None = None
    # where torch_range comes from: the tree's mindiesd/_torch_variants.py, or the catalog's MindIE-SD 3.1.0 list
    torch_range_from: str = ""
    torch_range_problem: str = ""  # why a found tree's variants file was not used
    torch_tested: tuple[str, ...] = ()  # the torch releases sdcompile's own suite runs on
    torch_untested: bool = False  # accepted (the tree has a variant) but not a tested release: a note, no problem
    torch_declared: str = ""  # pyproject's range, "torch>=2.7,<2.14"
