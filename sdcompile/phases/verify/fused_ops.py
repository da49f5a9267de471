"""The ops a pattern's replacement traces to, and which of them are the target's fused ops."""

from __future__ import annotations

from sdcompile.core.graph.nodes import target_name
from sdcompile.core.target.loader import emulated_fused_op_targets


def fused_targets() -> frozenset[str]:
    """The op targets of the target's fused (NPU) ops, as the loader emulates them."""

    return emulated_fused_op_targets()


def _replacement_graph(pattern_cls, inputs):
    """The replacement traced on fake tensors, or None when it does not trace."""
    from torch.fx.experimental.proxy_tensor import make_fx

    try:
        return make_fx(pattern_cls.replacement, tracing_mode="fake")(*inputs)
    except Exception:  # noqa: BLE001 - then the graph check cannot name its ops; numerics still run
        return None


def replacement_fused_ops(pattern_cls, inputs) -> tuple[str, ...]:
    """The fused ops the pattern's replacement traces to (what must appear after the pass)."""

    gm = _replacement_graph(pattern_cls, inputs)
    if gm is None:
        return ()
    fused = fused_targets()
    return tuple(dict.fromkeys(target_name(n.target) for n in gm.graph.nodes
                               if n.op == "call_function" and target_name(n.target) in fused))


def replacement_targets(pattern_cls, inputs) -> set[str]:
    """Every op the pattern's replacement calls (empty when it does not trace)."""

    gm = _replacement_graph(pattern_cls, inputs)
    if gm is None:
        return set()
    return {target_name(n.target) for n in gm.graph.nodes if n.op == "call_function"}
