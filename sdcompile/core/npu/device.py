"""Which NPU this process has: the real stack, the emulated one, or none — decided once, before diffusers loads.

    activate(mode)  "auto"      the real stack when torch_npu imports and torch.npu.is_available(), else emulated
                    "emulated"  sdcompile's emulated NPU: diffusers and the target both see an NPU host on CPU
                    "plain-cpu" diffusers sees a plain CPU process (no torch_npu), so models trace the graphs a
                                machine without an NPU traces; the target's fused ops are still emulated, because
                                its pattern files cannot even be imported without them
                    "npu"       the real stack, or EnvironmentMissing (exit 3)
    current()       the DeviceInfo of this process (activating "auto" on first use)

Why "before diffusers": diffusers decides `is_torch_npu_available()` once, at import, and from then on swaps
RMSNorm for `torch_npu.npu_rms_norm`, GEGLU for `npu_geglu`, and so on. A process that imported diffusers
before emulation was active traces plain-CPU graphs no matter what is installed later, so activation
refuses that case instead of producing graphs that are neither.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import threading
from dataclasses import dataclass

from sdcompile.util.errors import BadInput, EnvironmentMissing

MODES = ("auto", "emulated", "plain-cpu", "npu")
LABELS = {"npu": "npu", "emulated": "cpu (emulated npu)", "plain-cpu": "cpu"}
ENV_MODE = "SDCOMPILE_DEVICE"  # forces a mode for commands that have no flag for it (e.g. "emulated")
ENV_NPU_TENSOR_DEVICE = "SDCOMPILE_NPU_DEVICE"  # torch device for tensors on the real stack, default "npu"


class DeviceModeConflict(BadInput):
    """The process already committed to a device mode (or imported diffusers) in a way the request contradicts."""


@dataclass(frozen=True)
class DeviceInfo:
    mode: str  # "npu", "emulated" or "plain-cpu"
    label: str  # "npu", "cpu (emulated npu)" or "cpu": what results record as `device`
    requested: str  # the mode asked for ("auto" included)
    reason: str  # why this mode, in one sentence
    tensor_device: str  # torch device tensors live on: "npu" (or $SDCOMPILE_NPU_DEVICE) on the real stack, else "cpu"
    model_sees_npu: bool  # whether diffusers treats this process as an NPU host
    fused_ops: str  # "real" (torch_npu + MindIE-SD kernels) or "emulated" (sdcompile's CPU reference kernels)
    torch_npu_version: str | None  # as importlib.metadata reports it; the emulated one says so
    # What runs the target's Triton kernels (MindIE-SD's Python layers): the NPU itself, Triton's interpreter on
    # CPU, or nothing (the tree's CPU fallback, said with the reason); see emulation/triton_runtime.py
    npu_kernels: str = ""
    runs_npu_kernels: bool = False

    @property
    def is_real(self) -> bool:
        return self.mode == "npu"


_lock = threading.RLock()
_active: DeviceInfo | None = None


def current() -> DeviceInfo:
    """The active device; activates "auto" (or $SDCOMPILE_DEVICE) when nothing was activated yet."""
    return _active if _active is not None else activate(os.environ.get(ENV_MODE, "auto"))


def active() -> DeviceInfo | None:
    """The active device, or None when nothing has been activated (never activates)."""
    return _active


def activate_for_command(plain_cpu: bool = False) -> DeviceInfo:
    """What model-running commands call: `--plain-cpu` wins, else $SDCOMPILE_DEVICE, else "auto"."""
    return activate("plain-cpu" if plain_cpu else os.environ.get(ENV_MODE, "auto"))


def activate(mode: str = "auto") -> DeviceInfo:
    """Commit this process to a device mode (idempotent for the same mode). See the module docstring."""
    global _active
    if mode not in MODES:
        from sdcompile.util.choices import UnknownChoice

        raise UnknownChoice("device mode", mode, MODES)
    with _lock:
        if _active is not None:
            if mode in ("auto", _active.mode):
                return _active
            raise DeviceModeConflict(
                f"this process already runs with device mode {_active.mode!r} ({_active.label}); "
                f"cannot switch to {mode!r}",
                "device modes decide how diffusers and the target are imported: use a separate process",
            )
        if mode == "auto":
            info = _activate_auto()
        elif mode == "npu":
            info = _activate_real("npu", required=True)
        elif mode == "emulated":
            info = _activate_emulated("emulated", "emulation requested")
        else:
            info = _activate_plain_cpu()
        _active = info
        return info


# --------------------------------------------------------------------------------------------- real stack
def real_torch_npu_spec():
    """The spec of an installed torch_npu that is not sdcompile's stand-in, or None."""
    from sdcompile.core.npu.emulation import is_standin_origin

    module = sys.modules.get("torch_npu")
    if module is not None and not is_standin_origin(getattr(module, "__file__", None)):
        return module.__spec__
    if module is not None or "torch_npu" in sys.modules:  # the stand-in, or hidden (None) for plain-cpu
        return None
    spec = importlib.util.find_spec("torch_npu")
    if spec is None or is_standin_origin(spec.origin):
        return None
    return spec


def _activate_auto() -> DeviceInfo:
    if real_torch_npu_spec() is None:
        return _activate_emulated("auto", "no torch_npu installed: the NPU is emulated on CPU")
    return _activate_real("auto", required=False)


def _activate_real(requested: str, required: bool) -> DeviceInfo:
    spec = real_torch_npu_spec()
    if spec is None:
        raise EnvironmentMissing(
            "a real NPU was requested but torch_npu is not installed",
            "run on an Ascend host with torch_npu and CANN, or drop the request to use the emulated NPU",
        )
    try:
        import torch
        import torch_npu  # noqa: F401
    except Exception as exc:  # a broken install (missing CANN libraries, ABI mismatch): say which
        raise EnvironmentMissing(
            f"torch_npu is installed ({spec.origin}) but fails to import: {exc}",
            f"fix the NPU stack, or set {ENV_MODE}=emulated to emulate the NPU in a fresh process",
        ) from exc
    try:
        available = bool(torch.npu.is_available())
    except Exception as exc:
        available, why = False, f"torch.npu.is_available() raised {exc}"
    else:
        why = "torch.npu.is_available() is False"
    if not available:
        # The real torch_npu is imported now and owns the npu:: ops; emulation cannot replace it in this process.
        raise EnvironmentMissing(
            f"torch_npu imports but no NPU is usable: {why}",
            f"check the device (npu-smi info), or set {ENV_MODE}=emulated to emulate the NPU in a fresh process",
        )
    return DeviceInfo(
        mode="npu",
        label=LABELS["npu"],
        requested=requested,
        reason=f"torch_npu {_version('torch_npu')} with {torch.npu.device_count()} NPU device(s)",
        tensor_device=os.environ.get(ENV_NPU_TENSOR_DEVICE, "npu"),
        model_sees_npu=True,
        fused_ops="real",
        torch_npu_version=_version("torch_npu"),
        npu_kernels="the NPU runs the target's kernels itself",
        runs_npu_kernels=True,
    )


# ---------------------------------------------------------------------------------------------- emulation
def _diffusers_saw_npu() -> bool | None:
    """What an already-imported diffusers decided about torch_npu; None when diffusers is not imported."""
    if "diffusers" not in sys.modules:
        return None
    import_utils = sys.modules.get("diffusers.utils.import_utils")
    return bool(import_utils and import_utils.is_torch_npu_available())


def _refuse_real_torch_npu_loaded(mode: str) -> None:
    from sdcompile.core.npu.emulation import is_standin_origin

    module = sys.modules.get("torch_npu")
    if module is not None and not is_standin_origin(getattr(module, "__file__", None)):
        raise DeviceModeConflict(
            f"a real torch_npu is already imported in this process; it cannot be replaced by {mode!r}",
            "use a separate process",
        )


def _install_emulation(npu_tensors: bool) -> None:
    from sdcompile.core.npu.emulation import install
    from sdcompile.core.npu.emulation.ops import OpConflict

    try:
        install(npu_tensors=npu_tensors)
    except (OpConflict, RuntimeError) as exc:
        raise DeviceModeConflict(f"cannot install the emulated NPU: {exc}", "use a fresh process") from exc


def _activate_emulated(requested: str, reason: str) -> DeviceInfo:
    _refuse_real_torch_npu_loaded("emulated")
    if _diffusers_saw_npu() is False:
        raise DeviceModeConflict(
            "diffusers was imported before the emulated NPU was activated, so it decided this is not an NPU host "
            "(is_torch_npu_available() is False) and would trace plain-CPU graphs",
            "activate the device (sdcompile.core.npu.device.activate) before anything imports diffusers",
        )
    _install_emulation(npu_tensors=True)
    return DeviceInfo(
        mode="emulated",
        label=LABELS["emulated"],
        requested=requested,
        reason=reason,
        tensor_device="cpu",
        model_sees_npu=True,
        fused_ops="emulated",
        torch_npu_version=_version("torch_npu"),
        **_kernel_fields(),
    )


def _activate_plain_cpu() -> DeviceInfo:
    _refuse_real_torch_npu_loaded("plain-cpu")
    saw = _diffusers_saw_npu()
    if saw:
        raise DeviceModeConflict(
            "diffusers was already imported as on an NPU host, so it cannot trace plain-CPU graphs any more",
            "use a separate process for --plain-cpu",
        )
    if saw is None and importlib.util.find_spec("diffusers") is not None:
        # Let diffusers take its one-time decision now, while torch_npu is hidden (a None entry in
        # sys.modules makes find_spec return None and `import torch_npu` fail), then emulate for the target.
        hidden = "torch_npu" not in sys.modules
        if hidden:
            sys.modules["torch_npu"] = None
        try:
            importlib.import_module("diffusers.utils.import_utils")
        finally:
            if hidden and sys.modules.get("torch_npu", 0) is None:
                del sys.modules["torch_npu"]
    _install_emulation(npu_tensors=False)  # CPU tensors are plain CPU tensors: no torch_npu dispatch behaviours
    return DeviceInfo(
        mode="plain-cpu",
        label=LABELS["plain-cpu"],
        requested="plain-cpu",
        reason="plain CPU requested: diffusers traces without torch_npu; the target's fused ops are emulated",
        tensor_device="cpu",
        model_sees_npu=False,
        fused_ops="emulated",
        torch_npu_version=None,
        **_kernel_fields(),
    )


def _kernel_fields() -> dict:
    from sdcompile.core.npu.emulation import triton_runtime

    runtime = triton_runtime.status()
    if runtime is None:
        return {"npu_kernels": "NPU kernels not run: the tree's CPU fallback was used", "runs_npu_kernels": False}
    return {"npu_kernels": runtime.describe(), "runs_npu_kernels": runtime.runs_npu_kernels}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def process_torch_npu_version() -> str | None:
    """The torch_npu of this process: the active device's (None under plain-cpu: diffusers sees no torch_npu), else
    the one activation would pick (an installed real torch_npu, or the emulated one)."""
    from importlib import metadata

    from sdcompile.core.npu.emulation.behaviours import emulated_torch_npu_version

    info = active()
    if info is not None:
        return info.torch_npu_version
    if real_torch_npu_spec() is not None:
        try:
            return metadata.version("torch_npu")
        except metadata.PackageNotFoundError:
            return None
    return emulated_torch_npu_version()
