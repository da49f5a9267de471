"""diffusers' dtype policy by device type, answered as on an NPU host (catalogs/npu_branches.toml [device_dtypes]).

diffusers computes RoPE tables and rotations in float64 except on devices without it: `maybe_adjust_dtype_for_device`
downcasts to float32 when the tensor's device type is in a table that names "npu". Under the emulated NPU a CPU
tensor stands for an NPU tensor, so "cpu" joins those sets: the model computes in the dtypes it computes in on an
Ascend host, and a pattern is generated from the graph the NPU traces (AnyFlow's rotation in float32, not float64).

The table is read on every call, so changing it once is enough; it is changed when its module is imported, by
whoever imports it (a model file's factory, a generated test), or at once when it already is.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from dataclasses import dataclass
from typing import Any

from sdcompile.catalogs import load


@dataclass(frozen=True)
class DeviceDtypes:
    module: str
    table: str
    device: str
    as_device: str


def policy() -> DeviceDtypes:
    return DeviceDtypes(**load("npu_branches")["device_dtypes"])


def answer_as_npu(module: Any, spec: DeviceDtypes) -> None:
    """Add `as_device` to every set of the module's table naming `device`. A diffusers without the table (its models
    decide inline, which CPU tensors cannot change) is left as it is."""
    table = getattr(module, spec.table, None)
    if not isinstance(table, dict):
        return
    for dtype, devices in list(table.items()):
        if spec.device in devices and spec.as_device not in devices:
            table[dtype] = frozenset(devices) | {spec.as_device}


class _Loader(importlib.abc.Loader):
    """The module's own loader, then the change."""

    def __init__(self, inner: importlib.abc.Loader, spec: DeviceDtypes):
        self._inner, self._spec = inner, spec

    def create_module(self, module_spec):
        return self._inner.create_module(module_spec)

    def exec_module(self, module) -> None:
        self._inner.exec_module(module)
        answer_as_npu(module, self._spec)

    def __getattr__(self, name: str):  # get_code, get_source, resource readers: the inner loader's
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    sdcompile_device_dtypes = True

    def __init__(self, spec: DeviceDtypes):
        self._spec = spec

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self._spec.module:
            return None
        found = importlib.machinery.PathFinder.find_spec(fullname, path)
        if found is not None and found.loader is not None:
            found.loader = _Loader(found.loader, self._spec)
        return found


def install() -> None:
    spec = policy()
    module = sys.modules.get(spec.module)
    if module is not None:
        answer_as_npu(module, spec)
        return
    if not any(getattr(f, "sdcompile_device_dtypes", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(spec))
