"""Warm-up before a profile: forward passes until the compiled model stops compiling.

One call is not always enough. A model that caches something on its first forward (a RoPE table, a position
grid) changes what dynamo guarded on, so the second call compiles again, and freezing then runs real ops on real
weights. Inside the profile those ops would count as the model's kernels (copies among them), in the first step
only.
"""

from __future__ import annotations

from collections.abc import Callable

from sdcompile.core.torchcompat.dynamo import counters

MAX_CALLS = 4  # a model that still compiles after this many calls recompiles every call: profiled as it is


def compiled_frames() -> int:
    """Frames dynamo has compiled in this process so far."""

    return int(counters()["frames"]["ok"])


def warm_up(forward: Callable[[], object], compiles: bool) -> int:
    """Call `forward` until a call compiles nothing new (once when nothing `compiles`); returns the calls made."""
    calls = 0
    while True:
        before = compiled_frames()
        forward()
        calls += 1
        if not compiles or compiled_frames() == before or calls >= MAX_CALLS:
            return calls
