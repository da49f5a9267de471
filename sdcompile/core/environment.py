"""What produced a result: the software versions (every result carries `Versions`) and, for results that act on the
target, the device and the MindIE-SD tree (`TargetEnvironment`, which verify, debug and scaffold results extend,
so their JSON carries the same fields under the same names).

Versions are read from distribution metadata and the tree's files, never by importing torch, so torch-free commands
(`status`, `doctor`) can name them too.
"""

from __future__ import annotations

import dataclasses
import platform
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from sdcompile.core.npu.device import active, real_torch_npu_spec


@dataclass(frozen=True)
class Versions:
    python: str
    torch_version: str | None  # None: torch is not installed
    torch_npu_version: str | None  # the real one's, or the emulated one's ("2.9.0+sdcompile.emulated"); None: none
    torch_npu_emulated: bool  # sdcompile's emulated torch_npu (and fused ops), not Huawei's
    npu_behaviours: tuple[str, ...]  # keys of catalogs/npu_behaviours.toml that apply to that torch_npu
    diffusers_version: str | None
    target_version: str | None  # MindIE-SD, from the tree or its dist-info; "unknown" when neither; None: no tree


@dataclass(frozen=True)
class TargetEnvironment(Versions):
    device: str  # "npu", "cpu (emulated npu)" or "cpu"
    device_mode: str  # "npu", "emulated" or "plain-cpu"
    device_reason: str
    target: str  # the tree's root
    target_package: str  # how mindiesd was loaded
    # what ran the target's Triton kernels: the NPU, Triton's interpreter (which build), or nothing (the tree's CPU
    # fallback, and why): sdcompile.core.npu.emulation.triton_runtime. Keyword-only with a default, so results
    # recorded before it existed still load.
    npu_kernels: str = dataclasses.field(default="", kw_only=True)


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _torch_npu(device: Any) -> tuple[str | None, bool]:
    """This process's torch_npu (version, emulated): the given or active device's, else what activation would
    pick — a real torch_npu when one is installed, else the emulated one."""

    device = device if device is not None else active()
    if device is not None:
        return device.torch_npu_version, device.fused_ops != "real"
    if real_torch_npu_spec() is not None:
        return _dist_version("torch_npu"), False
    torch, module = _dist_version("torch"), _npu_behaviours_module()
    return (module.emulated_torch_npu_version(torch) if torch and module else _dist_version("torch_npu")), True


def _npu_behaviours_module():
    # The adapter to the emulation's behaviour catalog; tolerates a checkout without it (then none is listed).
    try:
        from sdcompile.core.npu.emulation import behaviours
    except ImportError:
        return None
    return behaviours


def npu_behaviours(torch_npu_version: str | None) -> list[Any]:
    """The catalogued torch_npu behaviours (NpuBehaviour: key, torch_npu_range, seen, effect, applies) judged for
    `torch_npu_version`; none applies without a torch_npu."""
    module = _npu_behaviours_module()
    return module.behaviours(torch_npu_version) if module else []


def collect_versions(tree: Any = None, device: Any = None) -> Versions:
    """The versions of this process, for `tree` (a TargetTree, or None when the command has none) and `device`
    (a DeviceInfo; default: the active one, if any)."""
    torch_npu, emulated = _torch_npu(device)
    applying = tuple(b.key for b in npu_behaviours(torch_npu) if b.applies)
    return Versions(python=platform.python_version(), torch_version=_dist_version("torch"),
                    torch_npu_version=torch_npu, torch_npu_emulated=emulated, npu_behaviours=applying,
                    diffusers_version=_dist_version("diffusers"),
                    target_version=tree.version if tree is not None else None)


def environment_fields(device: Any, tree: Any, target: Any) -> dict[str, Any]:
    """The TargetEnvironment fields for `device` (a DeviceInfo), `tree` (a TargetTree) and `target` (the loaded
    target), as keyword arguments of a result extending it."""
    versions = collect_versions(tree, device)
    return dict(**{name: getattr(versions, name) for name in Versions.__dataclass_fields__},
                device=device.label, device_mode=device.mode, device_reason=device.reason,
                target=str(tree.root), target_package=target.package_note, npu_kernels=device.npu_kernels)
