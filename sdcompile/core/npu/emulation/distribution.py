"""The emulated torch_npu's distribution metadata, so `importlib.metadata.version("torch_npu")` answers as diffusers
requires — with the version paired with the installed torch ("2.9.0+sdcompile.emulated"), which a dist-info folder
on disk could not follow. A metadata finder on sys.meta_path serves it while the stand-in is exposed."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

NAME = "torch_npu"


class EmulatedTorchNpuDistribution(importlib.metadata.Distribution):
    def __init__(self, version: str, location: Path):
        self._version = version
        self._location = location

    def read_text(self, filename):
        if filename == "METADATA":
            return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {self._version}\n"
                    "Summary: sdcompile's emulated NPU (CPU reference kernels of the fused ops); not Huawei's "
                    "torch_npu\n")
        if filename == "top_level.txt":
            return f"{NAME}\n"
        return None

    def locate_file(self, path):
        return self._location / path


class EmulatedTorchNpuFinder:
    """Finds no modules (the stand-in package is found on sys.path); finds the torch_npu distribution."""

    sdcompile_emulated = True

    def __init__(self, version: str, location: Path):
        self.distribution = EmulatedTorchNpuDistribution(version, location)

    def find_spec(self, fullname, path=None, target=None):
        return None

    def find_distributions(self, context=None):
        name = getattr(context, "name", None)
        if name is None or name.replace("-", "_").lower() == NAME:
            yield self.distribution


def install_finder(version: str, location: Path) -> None:
    """First on sys.meta_path, so it answers before any installed (and unusable) torch_npu's dist-info."""
    for finder in [f for f in sys.meta_path if getattr(f, "sdcompile_emulated", False)]:
        sys.meta_path.remove(finder)
    sys.meta_path.insert(0, EmulatedTorchNpuFinder(version, location))
