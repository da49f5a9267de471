"""One fused-op call judged as the NPU would run it: passes, raises, falls back, or differs.

    check_call(op, args, kwargs)     run the call with the NPU's kernels and judge it (KernelCheck)
    node_inputs(node, generator)     random inputs of a graph node's recorded shapes, dtypes and strides
                                     (core/target/kernel_sites.py judges every fused call of a compiled graph)

A fused op MindIE-SD writes in Python (`registered_by` in catalogs/fused_ops.toml: residual_gate_add, scale_shift,
...) runs its NPU branch: its Triton kernel under the interpreter (emulation/triton_runtime.py), or on a real NPU the
kernel itself. The verdict:
    raises       the call raised (a precondition of the NPU branch, or the kernel itself)
    falls back   the call returned without launching a kernel: at run time the op is the eager chain again (its
                 print, when it makes one, says why)
    differs      the kernel's result is not what the tree's torch fallback computes (the op's meaning) on the same
                 inputs, or it read or wrote outside its operands
    passes       none of these
An op sdcompile emulates (torch_npu's, MindIE-SD's compiled library) runs its reference kernel under the op's
documented contract (emulation/contracts.py): a violation is "raises", with the contract's words.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sdcompile.core.npu.emulation.ops import FusedOp, fused_op_table


class KernelVerdict(StrEnum):
    PASSES = "passes"
    RAISES = "raises"
    FALLS_BACK = "falls back"
    DIFFERS = "differs"
    NOT_RUN = "not run"  # the NPU's kernels are not available here: the tree's CPU fallback ran


@dataclass(frozen=True)
class Operand:
    name: str
    shape: tuple[int, ...]
    dtype: str  # "bfloat16"
    contiguous: bool

    def describe(self) -> str:
        layout = "" if self.contiguous else ", strided"
        return f"{self.name}=({', '.join(map(str, self.shape))}{',' if len(self.shape) == 1 else ''}) {self.dtype}" \
               f"{layout}"


@dataclass(frozen=True)
class WorstElement:
    index: tuple[int, ...]
    npu: float
    reference: float
    abs_error: float


@dataclass(frozen=True)
class KernelCheck:
    op: str  # "mindiesd::residual_gate_add"
    verdict: KernelVerdict
    operands: tuple[Operand, ...]
    kernels: tuple[str, ...]  # Triton kernels launched ("residual_gate_add_kernel"), or ("reference kernel",)
    message: str  # the error, the fallback's print, what differs; "" when it passes
    worst: WorstElement | None = None
    contract: str = ""  # for emulated ops: "documented (source)" / "unknown (...)"

    @property
    def passed(self) -> bool:
        return self.verdict is KernelVerdict.PASSES


# Kernel against the fallback run on the same operands in float32: both round once, so they agree to about an ulp of
# the output dtype.
_AGREEMENT = {"torch.bfloat16": (2.0**-7, 2.0**-7), "torch.float16": (2.0**-10, 2.0**-10),
              "torch.float32": (1e-5, 1e-6), "torch.float64": (1e-12, 1e-12)}  # (rtol, atol)


def fused_op(name: str) -> FusedOp | None:
    """The table's op by `ns::op` or its graph target `ns.op.default`."""
    for op in fused_op_table():
        if name in (op.name, op.target, f"{op.namespace}.{op.op_name}"):
            return op
    return None


def operands_of(op: FusedOp, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Schema argument name -> value, as the op's schema binds them."""
    import torch

    schema = getattr(getattr(torch.ops, op.namespace), op.op_name).default._schema
    bound = {}
    for i, argument in enumerate(schema.arguments):
        if i < len(args):
            bound[argument.name] = args[i]
        elif argument.name in kwargs:
            bound[argument.name] = kwargs[argument.name]
    return bound


def describe_operands(bound: dict[str, Any]) -> tuple[Operand, ...]:
    import torch

    return tuple(Operand(k, tuple(int(n) for n in v.shape), str(v.dtype).removeprefix("torch."), v.is_contiguous())
                 for k, v in bound.items() if isinstance(v, torch.Tensor))


def check_call(op: FusedOp, args: tuple, kwargs: dict | None = None) -> KernelCheck:
    kwargs = kwargs or {}
    bound = operands_of(op, args, kwargs)
    operands = describe_operands(bound)
    if op.registered_by:
        return _check_tree_op(op, args, kwargs, operands)
    return _check_emulated_op(op, args, kwargs, operands)


def _call(op: FusedOp, args: tuple, kwargs: dict):
    import torch

    return getattr(getattr(torch.ops, op.namespace), op.op_name).default(*args, **kwargs)


def _check_emulated_op(op: FusedOp, args, kwargs, operands) -> KernelCheck:
    from sdcompile.core.npu.emulation.contracts import ContractViolation, contract_of

    contract = contract_of(op.name)
    said = contract.describe() if contract else "unknown (no contract in catalogs/fused_ops.toml)"
    try:
        _call(op, args, kwargs)
    except ContractViolation as exc:
        return KernelCheck(op.name, KernelVerdict.RAISES, operands, ("reference kernel",), str(exc), contract=said)
    return KernelCheck(op.name, KernelVerdict.PASSES, operands, ("reference kernel",), "", contract=said)


def _check_tree_op(op: FusedOp, args, kwargs, operands) -> KernelCheck:
    from sdcompile.core.npu.emulation import tree_ops, triton_runtime

    runtime = triton_runtime.status()
    module = sys.modules.get(op.tree_module)
    if runtime is not None and not runtime.runs_npu_kernels:
        return KernelCheck(op.name, KernelVerdict.NOT_RUN, operands, (), runtime.describe(), contract="the tree's code")
    if module is None or not getattr(module, op.npu_branch, False):
        why = (f"{op.tree_module} is not imported" if module is None
               else f"{op.registered_by}'s {op.npu_branch} is false in this process")
        return KernelCheck(op.name, KernelVerdict.NOT_RUN, operands, (),
                           f"NPU kernels not run: the tree's CPU fallback was used ({why})", contract="the tree's code")
    function = getattr(getattr(module, op.op_name), "_init_fn", None) or (lambda *a, **k: _call(op, a, k))
    printed = io.StringIO()
    with triton_runtime.recording() as rec, contextlib.redirect_stdout(printed):
        try:
            got = tree_ops.run_widened(op, function, args, kwargs)  # the tree's own function, no guard
        except Exception as exc:  # noqa: BLE001 - the kernel's own error is the verdict
            gap = triton_runtime.interpreter_gap(exc)
            if gap:  # the interpreter cannot run this kernel: nothing is known of the NPU
                return KernelCheck(op.name, KernelVerdict.NOT_RUN, operands, _names(rec),
                                   f"not judged on the NPU's kernel: {gap}", contract="the tree's code")
            return KernelCheck(op.name, KernelVerdict.RAISES, operands, _names(rec), triton_runtime.error_text(exc),
                               contract="the tree's code")
    kernels = _names(rec)
    if not kernels:
        said = printed.getvalue().strip().splitlines()
        why = said[0] if said else "no Triton kernel launched: the op took its torch fallback without saying why"
        return KernelCheck(op.name, KernelVerdict.FALLS_BACK, operands, (), why, contract="the tree's code")
    if rec.out_of_bounds:
        oob = rec.out_of_bounds[0]
        where = (f"past {oob.operand} ({oob.operand_elements} elements)" if oob.operand else "outside every operand")
        return KernelCheck(op.name, KernelVerdict.DIFFERS, operands, kernels,
                           f"{oob.kernel} {oob.access}s {oob.elements} element(s) {where}: on the NPU they hold "
                           "another buffer's data", contract="the tree's code")
    with _npu_branch(module, op.npu_branch, False):  # the op's meaning, rounded once as the kernel rounds
        want = tree_ops.run_widened(op, function, args, kwargs)
    worst = _worst(got, want)
    if worst is not None:
        return KernelCheck(op.name, KernelVerdict.DIFFERS, operands, kernels,
                           f"the kernel's result differs from the op's torch fallback by up to {worst.abs_error:.4g} "
                           f"(at {list(worst.index)}: {worst.npu:.4g} on the NPU, {worst.reference:.4g} expected)",
                           worst, contract="the tree's code")
    return KernelCheck(op.name, KernelVerdict.PASSES, operands, kernels, "", contract="the tree's code")


def _names(rec) -> tuple[str, ...]:
    return tuple(dict.fromkeys(launch.kernel for launch in rec.launches))


@contextlib.contextmanager
def _npu_branch(module, flag: str, on: bool):
    """The op's NPU branch (on) or the tree's own torch fallback (off: the reference), then as it was."""
    saved = getattr(module, flag)
    setattr(module, flag, on)
    try:
        yield
    finally:
        setattr(module, flag, saved)


def _worst(got, want) -> WorstElement | None:
    """The element furthest outside the kernel-vs-fallback agreement, or None when every element agrees."""
    import torch

    pairs = [(g, w) for g, w in zip(_tensors(got), _tensors(want), strict=False)]
    for g, w in pairs:
        if g.shape != w.shape:
            return WorstElement((), float("nan"), float("nan"), float("inf"))
        rtol, atol = _AGREEMENT.get(str(w.dtype), _AGREEMENT["torch.float32"])
        a, b = g.double(), w.double()
        excess = (a - b).abs() - (atol + rtol * b.abs())
        excess = torch.where(torch.isfinite(excess), excess, torch.full_like(excess, float("inf")))
        if excess.numel() and float(excess.max()) > 0:
            flat = int(excess.argmax())
            index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), g.shape))
            return WorstElement(index, float(a.reshape(-1)[flat]), float(b.reshape(-1)[flat]),
                                float((a - b).abs().reshape(-1)[flat]))
    return None


def _tensors(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


# ------------------------------------------------------------------------------------------- graph nodes
def materialise(value, generator) -> Any:
    """A real tensor like a node's recorded FakeTensor (shape, dtype, strides), filled with random values: normal for
    floats, zeros for masks and indices. Non-tensors pass through."""
    import torch

    if isinstance(value, (list, tuple)):
        return type(value)(materialise(v, generator) for v in value)
    if not isinstance(value, torch.Tensor):
        return value
    shape, stride = tuple(int(n) for n in value.shape), tuple(int(s) for s in value.stride())
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) if all(shape) else 0
    if value.dtype.is_floating_point:
        storage = torch.randn(max(extent, 1), generator=generator, dtype=torch.float32).to(value.dtype)
    else:  # masks and indices: zeros index the first row of any table
        storage = torch.zeros(max(extent, 1), dtype=value.dtype)
    return storage.as_strided(shape, stride)


def node_inputs(node, generator, recorded=None) -> tuple[tuple, dict] | None:
    """Random inputs shaped as `node`'s arguments were when the graph was traced (None when one has no record).
    `recorded(arg_node)` gives what an argument holds when its meta does not (a frozen weight)."""
    import torch.fx

    missing = []

    def real(a):
        if isinstance(a, torch.fx.Node):
            val = a.meta.get("val")
            if val is None and recorded is not None:
                val = recorded(a)
            if val is None:
                missing.append(a.name)
            return materialise(val, generator)
        return a

    args = torch.fx.node.map_aggregate(node.args, real)
    kwargs = torch.fx.node.map_aggregate(node.kwargs, real)
    return None if missing else (tuple(args), dict(kwargs))
