"""Compiled vs eager timing: upstream's second assertion, measured only on a real NPU."""

from __future__ import annotations

from collections.abc import Callable

from sdcompile.testing.numerics import Timing, time_calls


def time_on_npu(device, eager: Callable[[], object], compiled: Callable[[], object], iterations: int = 20,
                warmup: int = 3) -> Timing | None:
    """`eager` and `compiled` timed with the NPU synchronised between calls; None off a real NPU."""
    if not device.is_real:
        return None

    def sync() -> None:
        import torch

        torch.npu.synchronize()

    return time_calls(eager, compiled, sync, iterations, warmup)
