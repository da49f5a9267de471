"""The data a function moves, counted op by op as it runs: what scaffold and verify weigh a replacement by against
the chain it replaces, before any profile exists (hit is not gain, its static half).

Each ATen op (and each fused op of the tree or of torch_npu, as one) reads its tensor inputs and writes its
outputs: a view reads and writes nothing, an input is read once however it is broadcast (its storage, or its
elements when it is a slice of a larger one), an output is written whole. Copies, casts and fills (clone, copy_,
_to_copy, contiguous, zeros_like, ...) are also tallied apart: bytes a replacement materialises that the chain never
made are the static sign of R2 (input materialisation) and R1 (dtype promotion).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

# ops that only allocate (their bytes are written by whatever fills them)
_ALLOCATING = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")
# ops whose work is copying or filling memory: a replacement's materialisations
_MATERIALISING = ("clone", "copy_", "copy", "_to_copy", "contiguous", "zeros_like", "ones_like", "full_like",
                  "zeros", "ones", "full", "fill_", "zero_", "new_zeros", "new_ones", "new_full", "expand_copy")


@dataclass(frozen=True)
class Movement:
    moved: int  # bytes read and written
    materialised: int  # bytes written by copies, casts and fills
    ops: int  # ops that moved data (a kernel launch each, on an NPU)


def _read_bytes(t: torch.Tensor) -> int:
    elements = t.numel() * t.element_size()
    try:
        storage = t.untyped_storage().nbytes() - t.storage_offset() * t.element_size()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (a wrapper subclass)
        return elements
    return min(elements, max(storage, 0))


class _Counter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.moved = self.materialised = self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.__name__.split(".")[0] if hasattr(func, "__name__") else str(func)
        if getattr(func, "is_view", False) or name in _ALLOCATING or name in ("detach", "alias", "lift_fresh"):
            return out
        seen: set[int] = set()
        read = 0
        for t in tree_leaves((args, kwargs or {})):
            if isinstance(t, torch.Tensor) and id(t) not in seen:
                seen.add(id(t))
                read += _read_bytes(t)
        written = sum(t.numel() * t.element_size() for t in tree_leaves(out) if isinstance(t, torch.Tensor))
        if name.rstrip("_") in _MATERIALISING or name in _MATERIALISING:
            self.materialised += written
        self.moved += read + written
        self.ops += 1
        return out


def measure(fn, *args) -> tuple[object, Movement]:
    """(fn(*args), what it moved)."""
    counter = _Counter()
    with torch.no_grad(), counter:
        out = fn(*args)
    return out, Movement(counter.moved, counter.materialised, counter.ops)
