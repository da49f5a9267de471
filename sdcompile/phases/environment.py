"""What produced a result that acts on the target: the device, the software versions and the MindIE-SD tree.
verify, debug and scaffold results extend this record, so their JSON carries the same fields under the same
names."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TargetEnvironment:
    device: str  # "npu", "cpu (emulated npu)" or "cpu"
    device_mode: str  # "npu", "emulated" or "plain-cpu"
    device_reason: str
    torch_version: str
    diffusers_version: str | None
    python: str
    target: str  # the tree's root
    target_version: str
    target_package: str  # how mindiesd was loaded


def environment_fields(device: Any, tree: Any, target: Any) -> dict[str, Any]:
    """The TargetEnvironment fields for `device` (a DeviceInfo), `tree` (a TargetTree) and `target` (the loaded
    target), as keyword arguments of a result extending it."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    try:
        diffusers_version = version("diffusers")
    except PackageNotFoundError:
        diffusers_version = None
    return dict(device=device.label, device_mode=device.mode, device_reason=device.reason,
                torch_version=torch.__version__, diffusers_version=diffusers_version,
                python=platform.python_version(), target=str(tree.root), target_version=tree.version,
                target_package=target.package_note)
