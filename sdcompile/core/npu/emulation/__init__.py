"""The emulated NPU: fused ops as torch.library custom ops with CPU kernels, a `torch.npu` namespace, and a
stand-in `torch_npu` package on disk, so diffusers and the target's pattern files see an NPU host on CPU.

    ops.py                   registers the ops of catalogs/fused_ops.toml (kernels.py holds their kernels)
    torch_npu_namespace.py   the `torch.npu` namespace
    standin/torch_npu/       the stand-in package; `standin/` goes on sys.path
    distribution.py          its metadata: importlib.metadata reports the torch_npu paired with the installed torch
                             ("2.9.0+sdcompile.emulated"), as diffusers requires
    behaviours.py            what that torch_npu release changes in traced graphs (catalogs/npu_behaviours.toml),
                             reproduced on CPU tensors
    mindiesd_standins.py     stand-ins for the NPU-only files of the target's mindiesd package
                             (catalogs/mindiesd_standins.toml); the rest of the package runs from the tree
    triton_runtime.py        the tree's Triton kernels under Triton's interpreter, behind a driver that answers as
                             an Ascend host, so the layer files take the branch they take on the NPU
    tree_ops.py              each call of those Python fused ops in runs: bf16 in float32, interpreter gaps, counts
    contracts.py             what each compiled fused op accepts (catalogs/fused_ops.toml), enforced by its kernel
    device_dtypes.py         diffusers' dtypes by device type, answered for CPU tensors as for NPU tensors

Use `sdcompile.core.npu.device.activate()` rather than these functions directly: the order of installation
relative to `import diffusers` decides what diffusers traces.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

STANDIN_DIR = Path(__file__).resolve().with_name("standin")


def is_standin_origin(origin: str | None) -> bool:
    """True when a module spec's origin is the stand-in torch_npu shipped here."""
    if not origin:
        return False
    try:
        return Path(origin).resolve().is_relative_to(STANDIN_DIR)
    except OSError:
        return False


def install_fused_ops(namespaces: tuple[str, ...] = ("npu", "mindiesd")) -> None:
    from sdcompile.core.npu.emulation.ops import register_ops

    register_ops(namespaces)


def install_torch_npu_namespace() -> None:
    import torch

    current = getattr(torch, "npu", None) if "npu" in torch.__dict__ else None
    if current is not None:
        if getattr(current, "sdcompile_emulated", False):
            return
        raise RuntimeError("torch.npu already exists (a real torch_npu was imported); cannot emulate over it")
    from sdcompile.core.npu.emulation.ops import emulated_device_facts
    from sdcompile.core.npu.emulation.torch_npu_namespace import build_namespace

    facts = emulated_device_facts()
    ns = build_namespace(facts["name"], int(facts["device_count"]), int(facts["soc_version"]))
    torch.npu = ns
    sys.modules["torch.npu"] = ns


def expose_standin_torch_npu() -> None:
    """Put the stand-in on sys.path (first, so it shadows an installed but unusable torch_npu), with its metadata."""
    from sdcompile.core.npu.emulation.behaviours import emulated_torch_npu_version
    from sdcompile.core.npu.emulation.distribution import install_finder

    install_finder(emulated_torch_npu_version(), STANDIN_DIR)
    entry = str(STANDIN_DIR)
    if sys.path[:1] != [entry]:
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
    if sys.modules.get("torch_npu", 0) is None:  # hidden for a plain-cpu import of diffusers: unhide
        del sys.modules["torch_npu"]
    importlib.invalidate_caches()


def install(npu_tensors: bool = True) -> None:
    """Everything: ops, torch.npu, the findable stand-in torch_npu (imported here to validate it) and, when the
    process's CPU tensors stand for NPU tensors (`npu_tensors`; not under plain-cpu), the behaviours of the
    torch_npu paired with the installed torch."""
    from sdcompile.core.npu.emulation import triton_runtime
    from sdcompile.core.npu.emulation.ops import emulated_device_facts

    install_fused_ops()
    install_torch_npu_namespace()
    triton_runtime.enable(emulated_device_facts())  # before the tree's layer files are imported
    expose_standin_torch_npu()
    module = importlib.import_module("torch_npu")
    if not is_standin_origin(getattr(module, "__file__", None)):
        raise RuntimeError(f"`import torch_npu` resolved to {module.__file__}, not sdcompile's stand-in")
    if npu_tensors:
        from sdcompile.core.npu.emulation import behaviours, device_dtypes

        behaviours.install(behaviours.behaviours(behaviours.emulated_torch_npu_version()))
        device_dtypes.install()  # diffusers' float64 -> float32 on NPU tensors, which CPU tensors stand for
