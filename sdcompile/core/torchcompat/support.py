"""Which torch releases sdcompile supports: MindIE-SD 3.1.0's range (its plugin variants cover 2.7 to 2.13)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata

# (lowest, highest) minor releases, inclusive; pyproject's `torch>=2.7,<2.14` says the same
SUPPORTED_TORCH: tuple[tuple[int, int], tuple[int, int]] = ((2, 7), (2, 13))


@dataclass(frozen=True)
class TorchSupport:
    version: str | None  # "2.9.0+cu128"; None when torch is not installed
    supported: bool

    @property
    def range_text(self) -> str:
        (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_TORCH
        return f"{lo_major}.{lo_minor} to {hi_major}.{hi_minor}"


def _release(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def torch_support(version: str | None = None) -> TorchSupport:
    """Read from torch's dist-info, so the check costs no `import torch`."""
    if version is None:
        try:
            version = metadata.version("torch")
        except metadata.PackageNotFoundError:
            return TorchSupport(None, False)
    release = _release(version)
    low, high = SUPPORTED_TORCH
    return TorchSupport(version, release is not None and low <= release <= high)
