"""Every fused-op call of a compiled graph judged as the NPU runs it (core/npu/kernel_check.py), with its site.

The compile session calls `check_graph` on the graph each compile ends with (after freezing and the last rewrite:
what runs). Each call of a fused op is run on inputs of the shapes, dtypes and strides the graph recorded (frozen
weights as they are), so a site is judged even when an earlier one raises at run time; calls with the same op and
operands are judged once. The site is the node's model source line and submodule, and the pattern whose
replacement put it there, when the session saw it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.npu.kernel_check import KernelCheck, KernelVerdict, check_call, fused_op, node_inputs
from sdcompile.core.target.graph_snapshots import module_path, source_line
from sdcompile.core.torchcompat.dynamo import outside_tracing


@dataclass(frozen=True)
class SiteKernel:
    """One fused-op call of a compiled graph and how it runs on the NPU."""

    node: str
    source: str  # the model source line the node came from: "file:line in fn: code" ("" when not recorded)
    module_path: str  # the submodule it ran in, when the graph kept it
    pattern: str  # the pattern whose replacement made the call ("" when the model called the op itself)
    check: KernelCheck

    @property
    def passed(self) -> bool:
        return self.check.verdict is KernelVerdict.PASSES

    @property
    def correct(self) -> bool:
        """Right on the NPU, if not necessarily fused: a fallback runs the eager chain (integrate's count contract
        fails it; verify reports it), and an unjudged call is said as such."""
        return self.check.verdict not in (KernelVerdict.RAISES, KernelVerdict.DIFFERS)


def check_graph(gm, applications=(), cache: dict | None = None) -> tuple[SiteKernel, ...]:
    """Judge every fused-op call node of `gm` (a GraphModule); `applications` (the session's) name the pattern."""
    import torch

    cache = {} if cache is None else cache
    by_trace = {a.stack_trace: a.pattern for a in applications if a.stack_trace}
    found = []
    for node in gm.graph.nodes:
        op = fused_op(str(node.target)) if node.op == "call_function" else None
        if op is None or op.cast:
            continue
        try:
            with outside_tracing():
                inputs = _inputs(gm, node)
            key = (op.name, _signature(inputs)) if inputs is not None else None
        except Exception as exc:  # noqa: BLE001 - symbolic sizes and the like: said, never fatal to the compile
            inputs, key = None, None
            cache[(op.name, node.name)] = _unjudged(op.name, f"{type(exc).__name__}: {exc}")
        if inputs is None:
            key = key or (op.name, node.name)
            cache.setdefault(key, _unjudged(op.name, "an argument's shape was not recorded in the graph"))
        elif key not in cache:
            with torch.no_grad(), outside_tracing():
                cache[key] = check_call(op, *inputs)
        trace = str(node.meta.get("stack_trace") or "")
        found.append(SiteKernel(node.name, source_line(trace), module_path(node.meta), by_trace.get(trace, ""),
                                cache[key]))
    return tuple(found)


def _unjudged(op: str, why: str) -> KernelCheck:
    return KernelCheck(op, KernelVerdict.NOT_RUN, (), (), f"not judged on the NPU's kernel: {why}")


def _inputs(gm, node):
    """Random inputs of the node's recorded shapes, frozen weights (get_attr) as the graph holds them."""
    import torch

    def frozen(arg):
        value = gm
        for part in str(arg.target).split(".") if arg.op == "get_attr" else ():
            value = getattr(value, part, None)
        return value if isinstance(value, torch.Tensor) else None

    return node_inputs(node, torch.Generator().manual_seed(0), frozen)


def _signature(inputs) -> tuple:
    import torch

    def one(v):
        if isinstance(v, torch.Tensor):
            return ("T", tuple(v.shape), tuple(v.stride()), str(v.dtype))
        if isinstance(v, (list, tuple)):
            return tuple(one(x) for x in v)
        return repr(v)

    args, kwargs = inputs
    return one(tuple(args)), tuple(sorted((k, one(v)) for k, v in kwargs.items()))
