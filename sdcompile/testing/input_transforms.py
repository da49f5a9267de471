"""Where a replacement parts from its search function, told by values rather than by reading code.

A fused op takes a role input (a norm's weight, a modulation's scale) at one point of the chain; a chain that
transforms the input before that point (`weight + 1` of a zero-centred RMSNorm, `1 + scale`, a cast, an eps folded
into a tensor) computes something else than the fused op given the raw input. Each value the search function
computes from one input alone, with that input's shape, is bound in the input's place; the first binding that makes
the replacement agree with the search function names the transform. An input whose change moves one side and not
the other is one of them ignores.

    nodes = traced_values(pattern_fn, inputs, names)              # every intermediate of the search function
    transform = find_input_transform(nodes, names, inputs, replacement, expected, judge)
    ignored = ignored_inputs(search, replacement, inputs, names)  # ("shift", ...) the replacement does not read
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sdcompile.testing.numerics import Numerics, output_tensors


@dataclass(frozen=True)
class ValueNode:
    name: str  # the variable (or graph node) holding it: "add_1"
    text: str  # how it is computed, short: "aten.add.Tensor(weight, 1)"
    reads: tuple[str, ...]  # the nodes and inputs its arguments are
    value: Any  # what it held on the inputs


@dataclass(frozen=True)
class InputTransform:
    role: str  # the input the search function transforms before the fused op's point: "weight"
    node: str  # the value that, bound in the input's place, makes the replacement agree: "add_1"
    steps: tuple[str, ...]  # the computation from the input to it, in order: ("aten.add.Tensor(weight, 1)",)
    numerics: Numerics  # the replacement with that binding, against the search function


def _sole_inputs(nodes: Sequence[ValueNode], names: Sequence[str]) -> dict[str, frozenset[str]]:
    """node -> the inputs it depends on (transitively)."""
    depends: dict[str, frozenset[str]] = {n: frozenset((n,)) for n in names}
    for node in nodes:
        depends[node.name] = frozenset().union(*(depends.get(r, frozenset()) for r in node.reads))
    return depends


def _closure(nodes: Sequence[ValueNode], name: str) -> list[ValueNode]:
    """The nodes `name` is computed from (itself included), in order."""
    by_name = {n.name: n for n in nodes}
    wanted, stack = set(), [name]
    while stack:
        current = stack.pop()
        if current in wanted or current not in by_name:
            continue
        wanted.add(current)
        stack.extend(by_name[current].reads)
    return [n for n in nodes if n.name in wanted]


def transform_candidates(nodes: Sequence[ValueNode], names: Sequence[str], role: str, like) -> list[ValueNode]:
    """Values computed from `role` alone with its shape, the furthest from it first."""
    import torch

    depends = _sole_inputs(nodes, names)
    found = [n for n in nodes if depends.get(n.name) == frozenset((role,)) and isinstance(n.value, torch.Tensor)
             and tuple(n.value.shape) == tuple(like.shape) and n.value.dtype.is_floating_point]
    return list(reversed(found))


def find_input_transform(nodes: Sequence[ValueNode], names: Sequence[str], inputs: Sequence[Any],
                         replacement: Callable[..., Any], expected: Any,
                         judge: Callable[[Any, Any], Numerics]) -> InputTransform | None:
    """The first input transform whose value, bound in the input's place (cast to its dtype), makes
    `replacement(*inputs)` agree with `expected` by `judge`; None when no single one does."""
    import torch

    for i, role in enumerate(names):
        original = inputs[i] if i < len(inputs) else None
        if not isinstance(original, torch.Tensor) or not original.dtype.is_floating_point:
            continue
        for candidate in transform_candidates(nodes, names, role, original):
            trial = list(inputs)
            trial[i] = candidate.value.to(original.dtype)
            try:
                numerics = judge(replacement(*trial), expected)
            except Exception:  # noqa: BLE001, S112 - a binding the fused op rejects is simply not the answer
                continue
            if numerics.passed:
                steps = tuple(n.text for n in _closure(nodes, candidate.name))
                return InputTransform(role, candidate.name, steps, numerics)
    return None


def ignored_inputs(search: Callable[..., Any], replacement: Callable[..., Any], inputs: Sequence[Any],
                   names: Sequence[str], seed: int = 1) -> tuple[tuple[str, str], ...]:
    """(input, side) for each floating input whose perturbation changes one side's output and not the other's:
    side "replacement" when the replacement ignores it, "search" when only the replacement reads it."""
    import torch

    def changed(fn, trial) -> bool:
        before = output_tensors(fn(*inputs))
        after = output_tensors(fn(*trial))
        return any(not torch.equal(a, b) for a, b in zip(before, after, strict=False))

    gen = torch.Generator().manual_seed(seed)
    found = []
    for i, name in enumerate(names):
        value = inputs[i] if i < len(inputs) else None
        if not isinstance(value, torch.Tensor) or not value.dtype.is_floating_point:
            continue
        trial = list(inputs)
        trial[i] = value + torch.randn(value.shape, generator=gen).to(value.dtype).to(value.device)
        moved_search, moved_replacement = changed(search, trial), changed(replacement, trial)
        if moved_search and not moved_replacement:
            found.append((name, "replacement"))
        elif moved_replacement and not moved_search:
            found.append((name, "search"))
    return tuple(found)


def traced_values(fn: Callable[..., Any], inputs: Sequence[Any], names: Sequence[str]) -> list[ValueNode]:
    """Every intermediate value of `fn(*inputs)`, by tracing it to ATen ops (make_fx) and running the trace.
    Inputs keep their names; other nodes are named as the trace names them."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(fn, tracing_mode="real")(*inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    label = {p.name: (names[i] if i < len(names) else p.name) for i, p in enumerate(placeholders)}
    values: dict[str, Any] = {}

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            values[n.name] = result
            return result

    _Recorder(gm).run(*inputs)
    nodes = []
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        reads = tuple(label.get(a.name, a.name) for a in n.all_input_nodes)
        nodes.append(ValueNode(n.name, _text(n, label), reads, values.get(n.name)))
    return nodes


def _text(node, label: dict[str, str]) -> str:
    import torch

    def arg(a) -> str:
        if isinstance(a, torch.fx.Node):
            return label.get(a.name, a.name)
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(arg(x) for x in a) + "]"
        return repr(a)

    parts = [arg(a) for a in node.args] + [f"{k}={arg(v)}" for k, v in node.kwargs.items()]
    target = str(getattr(node.target, "__name__", node.target)) if not hasattr(node.target, "overloadpacket") \
        else str(node.target)
    return f"{target}({', '.join(parts)})"
