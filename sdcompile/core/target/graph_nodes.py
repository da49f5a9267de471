"""The nodes a compiled graph runs, in order, each with the op event a profiler records for it and the model source
line it came from: what ties a profile's kernel rows back to the graph sdcompile compiled.

MindIE-SD's default backend returns the final FX graph itself, so each call of a compiled region runs its
call_function nodes one after the other, and torch.profiler records one top-level op event per node inside the
region's `Torch-Compiled Region: <compile id>` range (dynamo's; the same spelling on torch 2.9 and 2.13).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.npu.kernel_check import fused_op
from sdcompile.core.target.graph_snapshots import module_path, source_line
from sdcompile.core.torchcompat.dynamo import current_compile_id

REGION_PREFIX = "Torch-Compiled Region: "


@dataclass(frozen=True)
class GraphNode:
    name: str  # the FX node ("mul_3")
    op: str  # the op event a profiler records for it ("aten::mul", "npu::npu_rms_norm")
    source: str  # the model line it came from ("model.py:42 in forward: x = ..."), "" when not recorded
    module_path: str  # the submodule it ran in ("blocks.0.norm1"), "" when the graph did not keep it


@dataclass(frozen=True)
class FinalGraph:
    """One graph a compile ended with (after freezing and the last rewrite: what runs)."""

    compile_id: str  # dynamo's "frame/compile" id, as its profiler range names it; "" when unknown
    nodes: tuple[GraphNode, ...]  # the call_function nodes that record an op event, in run order
    fused_calls: tuple[tuple[str, int], ...]  # (fused op, its call nodes): what one run of the graph launches fused


def final_graph(gm) -> FinalGraph:
    nodes, fused = [], {}
    for node in gm.graph.nodes:
        event = event_name(node.target) if node.op == "call_function" else ""
        if not event:
            continue
        nodes.append(GraphNode(node.name, event, source_line(str(node.meta.get("stack_trace") or "")),
                               module_path(node.meta)))
        op = fused_op(str(node.target))
        if op is not None and not op.cast:
            fused[op.name] = fused.get(op.name, 0) + 1
    return FinalGraph(current_compile_id(), tuple(nodes), tuple(sorted(fused.items())))


def event_name(target) -> str:
    """The profiler's name for calling `target` ("aten::mul" for aten.mul.Tensor); "" for what records no op event
    (operator.getitem and other Python callables)."""
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return str(schema.name)
    qualified = getattr(target, "_qualified_op_name", None)  # an OpOverloadPacket
    return str(qualified) if qualified else ""


def align(events: list[str], graph: FinalGraph, lookahead: int = 8) -> list[int]:
    """For the top-level op events of one region call (their names, in order), the index of the graph node each
    ran as, or -1 for an event no node made (the runtime wrapper's own ops). Nodes run in order, so each event is
    matched to the next node of its name within `lookahead` nodes; a node whose event was not recorded is skipped."""
    out, at = [], 0
    names = [n.op for n in graph.nodes]
    for event in events:
        found = next((j for j in range(at, min(at + lookahead, len(names))) if names[j] == event), -1)
        out.append(found)
        if found >= 0:
            at = found + 1
    return out
