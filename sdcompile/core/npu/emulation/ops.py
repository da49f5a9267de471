"""Register the fused ops of `catalogs/fused_ops.toml` as torch.library custom ops (CPU kernel + fake kernel).

Ops the catalog marks `registered_by` a file of the target tree (MindIE-SD's pure-Python layers: muls_add,
residual_gate_add, scale_shift, ...) are left to that file, which defines them with its own torch fallback when the
loader imports it; only the ops of compiled libraries (torch_npu's, MindIE-SD's libPTAExtensionOPS.so) are emulated.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from sdcompile.catalogs import load

_lock = threading.Lock()
_registered: dict[str, object] = {}  # "ns::op" -> CustomOpDef, registered by this process


@dataclass(frozen=True)
class FusedOp:
    name: str  # "npu::npu_rms_norm"
    schema: str
    kernel: str  # "" for an op the target defines
    fake: str
    exposed_as: tuple[str, ...]
    npu_kernels: tuple[str, ...]
    used_by: tuple[str, ...]
    semantics: str
    registered_by: str = ""  # "mindiesd/layers/muls_add.py": the target file that defines it instead of sdcompile
    npu_branch: str = ""  # that file's flag choosing its NPU (Triton) path: "_TRITON_ON_ASCEND"
    cast: bool = False  # a dtype cast torch_npu < 2.9 traces Tensor.to as, not a fusion

    @property
    def emulated(self) -> bool:
        return not self.registered_by

    @property
    def namespace(self) -> str:
        return self.name.split("::", 1)[0]

    @property
    def op_name(self) -> str:
        return self.name.split("::", 1)[1]

    @property
    def tree_module(self) -> str:
        """The module of the target that defines a registered_by op: `mindiesd.layers.residual_gate_add`."""
        return self.registered_by.removesuffix(".py").replace("/", ".")

    @property
    def target(self) -> str:
        """How the op's node target prints in an FX graph: `npu.npu_rms_norm.default`."""
        return f"{self.namespace}.{self.op_name}.default"


def fused_op_table() -> tuple[FusedOp, ...]:
    return tuple(
        FusedOp(
            name=e["name"], schema=e["schema"], kernel=e.get("kernel", ""), fake=e.get("fake", ""),
            exposed_as=tuple(e.get("exposed_as", ())), npu_kernels=tuple(e.get("npu_kernels", ())),
            used_by=tuple(e.get("used_by", ())), semantics=e.get("semantics", ""),
            registered_by=e.get("registered_by", ""), npu_branch=e.get("npu_branch", ""), cast=bool(e.get("cast")),
        )
        for e in load("fused_ops")["op"]
    )


def emulated_device_facts() -> dict:
    return dict(load("fused_ops")["emulated_device"])


class OpConflict(RuntimeError):
    """An op of the table is already defined by something else in this process (e.g. a real torch_npu)."""


def _already_defined(name: str) -> bool:
    namespace, op = name.split("::", 1)
    try:
        return hasattr(getattr(__import__("torch").ops, namespace), op)
    except (AttributeError, RuntimeError):
        return False


def register_ops(namespaces: tuple[str, ...] = ("npu", "mindiesd"), skip_existing: bool = False) -> tuple[str, ...]:
    """Register every emulated table op in `namespaces` once per process; returns the names registered by this call.

    `skip_existing` leaves ops that something else already defined alone (a real stack that provides some of
    them); otherwise such an op is a conflict.
    """
    import torch

    from sdcompile.core.npu.emulation import kernels

    added = []
    with _lock:
        for op in fused_op_table():
            if not op.emulated or op.namespace not in namespaces or op.name in _registered:
                continue
            if _already_defined(op.name):
                if skip_existing:
                    continue
                raise OpConflict(
                    f"{op.name} is already defined in this process by something other than sdcompile's emulation "
                    "(a real torch_npu or mindiesd was imported first)"
                )
            custom = torch.library.custom_op(
                op.name, _under_contract(op.name, getattr(kernels, op.kernel)), mutates_args=(), schema=op.schema
            )
            custom.register_fake(getattr(kernels, op.fake))
            _registered[op.name] = custom
            added.append(op.name)
    return tuple(added)


def _under_contract(name: str, kernel):
    """`kernel`, refusing first what the real op refuses (emulation/contracts.py)."""
    import functools
    import inspect

    from sdcompile.core.npu.emulation.contracts import contract_of, enforce

    if contract_of(name) is None:
        return kernel
    signature = inspect.signature(kernel)

    @functools.wraps(kernel)
    def checked(*args, **kwargs):
        enforce(name, dict(signature.bind(*args, **kwargs).arguments))
        return kernel(*args, **kwargs)

    return checked


def registered_ops() -> tuple[str, ...]:
    return tuple(_registered)
