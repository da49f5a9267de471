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
