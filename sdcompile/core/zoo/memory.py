"""Whether a model fits this machine before it is built: constructed on the meta device (no storage, milliseconds),
its parameters and buffers counted, and compared with the memory available.

    need = estimate(cls, config)       # Estimate(parameters=535_000_000, bytes_fp32=...)
    check_fits(need, "FluxTransformer2DModel at real size", hint)   # BadInput (exit 2) when it does not fit

A model is built in float32 and then cast, and compiling it keeps its graphs beside it, so a build needs about
NEED_FACTOR times its float32 size (measured on real-size one-layer Flux and Wan: benchmarks/real_size.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sdcompile.util.errors import BadInput

NEED_FACTOR = 2.5
MEMORY_ENV = "SDCOMPILE_MEMORY_GB"


@dataclass(frozen=True)
class Estimate:
    parameters: int
    bytes_fp32: int  # parameters and floating buffers at 4 bytes, other buffers at their own size

    @property
    def needed(self) -> int:
        return int(self.bytes_fp32 * NEED_FACTOR)


def estimate(cls, config: dict[str, Any]) -> Estimate:
    """The size of `cls(**config)`, built on the meta device (its constructor's own errors propagate)."""
    import torch

    with torch.device("meta"):
        module = cls(**config)
    params = sum(p.numel() for p in module.parameters())
    size = params * 4
    for buffer in module.buffers():
        size += buffer.numel() * (4 if buffer.is_floating_point() else buffer.element_size())
    return Estimate(params, size)


def available_bytes() -> int | None:
    """$SDCOMPILE_MEMORY_GB, else the kernel's MemAvailable; None when neither is known (no check)."""
    text = os.environ.get(MEMORY_ENV)
    if text:
        try:
            value = float(text)
        except ValueError:
            raise BadInput(f"${MEMORY_ENV}={text!r} is not a number of gigabytes", f"e.g. {MEMORY_ENV}=64") from None
        if value <= 0:
            raise BadInput(f"${MEMORY_ENV}={text!r} allows no memory", f"e.g. {MEMORY_ENV}=64")
        return int(value * 2**30)
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def fits(need: Estimate) -> bool:
    available = available_bytes()
    return available is None or need.needed <= available


def check_fits(need: Estimate, what: str, fix: str) -> None:
    available = available_bytes()
    if available is None or need.needed <= available:
        return
    raise BadInput(f"{what} has {shown_count(need.parameters)} parameters: building and compiling it takes about "
                   f"{need.needed / 2**30:.0f} GB, and {available / 2**30:.0f} GB are available here", fix)


def shown_count(n: int) -> str:
    """1234567 -> "1.2 M", 11_891_000_000 -> "11.9 B"."""
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return str(n)
