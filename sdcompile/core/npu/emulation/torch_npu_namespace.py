"""The emulated `torch.npu` namespace: an NPU that reports itself available and runs nothing itself.

The target's pattern modules ask `torch.npu.is_available()` before importing torch_npu and mindiesd;
MindIE-SD's `is_npu_available()` asks `torch.npu.device_count()`. Attributes that a real NPU offers and the
emulation does not (NPUGraph, streams, memory pools) are deliberately missing, so code that probes for them
with `hasattr` takes its no-NPU-graph path (MindIE-SD's aclgraph backend reports itself unavailable).
"""

from __future__ import annotations

import types


def build_namespace(device_name: str, device_count: int, soc_version: int) -> types.ModuleType:
    ns = types.ModuleType("torch.npu", "Emulated torch.npu (sdcompile): CPU stands in for the NPU.")
    state = {"device": 0}

    def is_available() -> bool:
        return True

    def device_count_() -> int:
        return device_count

    def current_device() -> int:
        return state["device"]

    def set_device(device) -> None:
        index = getattr(device, "index", device)
        state["device"] = int(index or 0)

    def get_device_name(device=None) -> str:
        return device_name

    def synchronize(device=None) -> None:
        """CPU work is synchronous: nothing to wait for."""

    def manual_seed(seed: int) -> None:
        import torch

        torch.manual_seed(seed)

    def get_soc_version() -> int:
        """MindIE-SD's utils/get_platform.py reads the Ascend generation from it (the layers pick ops by it)."""
        return soc_version

    def is_bf16_supported() -> bool:
        return True

    def empty_cache() -> None:
        pass

    def memory_allocated(device=None) -> int:
        return 0

    for fn in (is_available, current_device, set_device, get_device_name, synchronize, manual_seed,
               get_soc_version, is_bf16_supported, empty_cache, memory_allocated):
        setattr(ns, fn.__name__, fn)
    ns.device_count = device_count_
    ns.manual_seed_all = manual_seed
    ns.max_memory_allocated = memory_allocated
    ns.is_initialized = is_available
    ns.sdcompile_emulated = True

    def __getattr__(name: str):
        raise AttributeError(f"torch.npu.{name} is not emulated by sdcompile (no NPU graphs, streams or memory pools)")

    ns.__getattr__ = __getattr__
    return ns
