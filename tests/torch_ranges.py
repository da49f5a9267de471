"""Which torch a documentation block is true for: ```` ```console torch>=2.12 ```` runs only there.

A claim that differs by torch is shown once per range, each block checked under its own torch (make test runs
the docs tests on torch 2.13 and 2.9)."""

from __future__ import annotations

import re
from importlib import metadata

TORCH_RANGE = re.compile(r"torch(>=|<)(\d+)\.(\d+)")


def torch_release() -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", metadata.version("torch")).groups()
    return int(major), int(minor)


def holds_here(info: str) -> bool:
    """Whether every `torch>=X.Y` / `torch<X.Y` condition in a block's info string holds for the installed torch."""
    here = torch_release()
    for op, major, minor in TORCH_RANGE.findall(info):
        bound = (int(major), int(minor))
        if (op == ">=" and here < bound) or (op == "<" and here >= bound):
            return False
    return True


def behaviour_state() -> frozenset[str]:
    """The version-dependent behaviours that hold in this process: torch's (probed) and the NPU's (the real
    torch_npu's, or the emulation's for the installed torch). Tables of expectations measured under one state are
    selected by it, so a torch that changes a behaviour cannot silently reuse another torch's numbers."""
    from sdcompile.core.npu.device import process_torch_npu_version
    from sdcompile.core.npu.emulation.behaviours import behaviours as npu_behaviours
    from sdcompile.core.torchcompat.behaviours import behaviours as torch_behaviours

    npu = npu_behaviours(process_torch_npu_version())
    return frozenset({b.key for b in torch_behaviours() if b.holds} | {b.key for b in npu if b.applies})


def for_this_state(tables: list[dict]) -> dict:
    """The one table whose `holds` list is exactly this process's behaviour state; a state nobody measured is a
    failure that says what to measure, never a fallback to another state's table."""
    here = behaviour_state()
    matching = [t for t in tables if frozenset(t["holds"]) == here]
    assert len(matching) == 1, (f"{len(matching)} tables for behaviour state {sorted(here)}; measure this torch and "
                                f"add a table with holds = {sorted(here)}")
    return matching[0]
