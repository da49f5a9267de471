"""The torch_npu behaviours of `catalogs/npu_behaviours.toml`: which apply to this process, and the emulation of them.

The emulated torch_npu is the one paired with the installed torch (torch_npu X.Y with torch X.Y), so its behaviour
set is the catalog's entries whose torch_npu range holds for that version: under torch 2.7 or 2.8,
`Tensor.to(dtype)` on an (emulated) NPU tensor traces as `npu._npu_dtype_cast`, as torch_npu 2.7 and 2.8 make it
do, and MindIE-SD's patterns for those releases expect. `behaviours()` mirrors sdcompile.core.torchcompat.behaviours
(the torch side) so `sdcompile doctor` can list both.

The dispatch is reproduced with the real mechanism: a `torch.library` kernel for the aten overload on the
AutogradCPU key (CPU tensors stand for NPU tensors under emulation), calling the emulated op, so eager runs, dynamo
and AOT tracing all see that op, as they would see torch_npu's.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from sdcompile.util.errors import BadInput

CATALOG = "npu_behaviours"
EMULATED_LOCAL = "sdcompile.emulated"  # the local version label of the emulated torch_npu: "2.9.0+sdcompile.emulated"


@dataclass(frozen=True)
class NpuBehaviour:
    key: str
    torch_npu_range: str  # ">=2.7,<2.9"
    seen: str
    applies_text: str
    otherwise_text: str
    applies: bool  # holds for the torch_npu this process has (real, or emulated and paired with torch)
    dispatch_op: str  # "to.dtype": the aten overload the emulation overrides when it applies
    dispatch_to: str  # "npu::_npu_dtype_cast"

    @property
    def effect(self) -> str:
        return self.applies_text if self.applies else self.otherwise_text


def _release(version: str) -> tuple[int, ...]:
    found = re.match(r"\d+(\.\d+)*", version.strip())
    if not found:
        raise BadInput(f"cannot read a release from version {version!r}")
    return tuple(int(p) for p in found.group(0).split("."))


def _pad(release: tuple[int, ...]) -> tuple[int, ...]:
    return (release + (0, 0, 0))[:3]


_COMPARE = {
    ">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def in_range(version: str, spec: str) -> bool:
    """Whether the release of `version` ("2.8.0+sdcompile.emulated") satisfies `spec` (">=2.7,<2.9")."""
    release = _pad(_release(version))
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        found = re.fullmatch(r"(>=|<=|==|!=|>|<)\s*([\d.]+)", clause)
        if not found:
            raise BadInput(f"catalogs/{CATALOG}.toml: cannot read the range clause {clause!r}")
        if not _COMPARE[found.group(1)](release, _pad(_release(found.group(2)))):
            return False
    return True


def emulated_torch_npu_version(torch_version: str | None = None) -> str:
    """The version the emulated torch_npu reports: the release of the installed torch ("2.9.0+sdcompile.emulated")."""
    if torch_version is None:
        from importlib import metadata

        torch_version = metadata.version("torch")
    return ".".join(map(str, _pad(_release(torch_version)))) + f"+{EMULATED_LOCAL}"


def catalog() -> list[dict]:
    from sdcompile.catalogs import load

    entries = load(CATALOG).get("behaviour", [])
    for entry in entries:
        missing = [k for k in ("key", "torch_npu", "seen", "applies", "otherwise", "dispatch") if k not in entry]
        if missing or entry["dispatch"].get("op") not in _DISPATCHERS:
            raise BadInput(f"catalogs/{CATALOG}.toml: entry {entry.get('key', '?')!r} lacks {missing} or names a "
                           "dispatch the emulation cannot reproduce; fix the entry")
    return entries


def behaviours(torch_npu_version: str | None) -> list[NpuBehaviour]:
    """Every catalogued behaviour and whether it applies to `torch_npu_version` (this process's:
    sdcompile.core.npu.device.process_torch_npu_version(); None: no torch_npu, so none applies)."""
    version = torch_npu_version
    return [
        NpuBehaviour(
            key=e["key"], torch_npu_range=e["torch_npu"], seen=e["seen"], applies_text=e["applies"],
            otherwise_text=e["otherwise"], applies=version is not None and in_range(str(version), e["torch_npu"]),
            dispatch_op=e["dispatch"]["op"], dispatch_to=e["dispatch"]["to"],
        )
        for e in catalog()
    ]


# ------------------------------------------------------------------------------------------ the emulation of them
def _to_dtype_via(target: str):
    import torch

    namespace, name = target.split("::", 1)

    def to_dtype(self, dtype, non_blocking=False, copy=False, memory_format=None):
        if (torch.is_grad_enabled() and self.requires_grad) or memory_format not in (None, torch.preserve_format):
            # training graphs and memory formats are outside what the emulated cast covers: torch's own cast
            return torch.ops.aten._to_copy.default(self, dtype=dtype, memory_format=memory_format)
        if self.dtype == dtype and not copy:
            return self
        return getattr(getattr(torch.ops, namespace), name)(self, dtype)

    return to_dtype


_DISPATCHERS = {"to.dtype": _to_dtype_via}
_lock = threading.Lock()
_installed: dict[str, tuple[str, object]] = {}  # aten overload -> (emulated op, the torch.library.Library kept alive)


def install(selected: list[NpuBehaviour]) -> tuple[str, ...]:
    """Make each applying behaviour's aten overload dispatch to its emulated op on CPU tensors (once per process);
    returns the keys installed by this call. The emulated ops must be registered first (emulation.install does)."""
    import torch

    added = []
    with _lock:
        for behaviour in selected:
            if not behaviour.applies:
                continue
            current = _installed.get(behaviour.dispatch_op)
            if current is not None:
                if current[0] != behaviour.dispatch_to:
                    raise RuntimeError(f"aten::{behaviour.dispatch_op} already dispatches to {current[0]} in this "
                                       f"process; {behaviour.key} needs {behaviour.dispatch_to}: use a fresh process")
                continue
            library = torch.library.Library("aten", "IMPL")
            library.impl(behaviour.dispatch_op, _DISPATCHERS[behaviour.dispatch_op](behaviour.dispatch_to),
                         "AutogradCPU")
            _installed[behaviour.dispatch_op] = (behaviour.dispatch_to, library)
            added.append(behaviour.key)
    return tuple(added)


def installed() -> dict[str, str]:
    """aten overload -> the emulated op it dispatches to in this process."""
    return {op: target for op, (target, _) in _installed.items()}
