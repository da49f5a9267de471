"""What the observed backend keeps of each graph: node lists, readable code, the graph around the pattern pass."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from sdcompile.core.graph.nodes import fqn_from_source_path, target_name


@dataclass(frozen=True)
class NodeOp:
    name: str
    op: str  # placeholder, call_function, get_attr, output
    target: str  # "aten.pow.Tensor_Scalar", "npu.npu_rms_norm.default", "getitem"


@dataclass(frozen=True)
class GraphSnapshot:
    code: str  # GraphModule.print_readable(), stable enough to diff and to show
    nodes: tuple[NodeOp, ...]

    def op_counts(self) -> Counter:
        return Counter(n.target for n in self.nodes if n.op == "call_function")


@dataclass(frozen=True)
class PassCapture:
    """The graph the pattern pass received and the graph it returned, for one compiled graph."""

    before: GraphSnapshot
    after: GraphSnapshot | None  # None when the pass raised
    error: str | None = None
    # Live objects for diagnosis, never reported: the GraphModule the pass rewrote, and a copy of its graph as
    # the pass received it (node meta shared, not copied).
    graph_module: object = dataclasses.field(default=None, compare=False, repr=False)
    before_graph: object = dataclasses.field(default=None, compare=False, repr=False)


def snapshot(gm) -> GraphSnapshot:
    nodes = tuple(NodeOp(n.name, n.op, target_name(n.target)) for n in gm.graph.nodes)
    try:
        code = gm.print_readable(print_output=False)
    except Exception:  # noqa: BLE001 - printing is best effort; the node list is the evidence
        code = str(gm.graph)
    return GraphSnapshot(code, nodes)


def source_line(trace: str) -> str:
    """The innermost frame of a node's recorded stack outside torch itself: `file:line in fn: code`."""
    from pathlib import Path

    import torch

    torch_dir = str(Path(torch.__file__).parent)
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("File ") and torch_dir not in lines[i]:
            code = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else ""
            where = lines[i].replace("File ", "", 1).replace('"', "").replace(", line ", ":").replace(", in ", " in ")
            where = where.split("site-packages/", 1)[-1]
            return f"{where}: {code}".strip(": ")
    return ""


def module_path(meta: dict) -> str:
    """The submodule a node ran in (\"blocks.0.attn1.norm_q\"), \"\" when the graph did not keep it."""
    stack = meta.get("nn_module_stack") or {}
    if not stack:
        return ""

    # dynamo's spelling differs by torch (2.13: L['self'].__dict__['_modules']['blocks'][0]; 2.9:
    # L['self']._modules['blocks']._modules['0']): one reader for all of them
    return fqn_from_source_path(str(list(stack.values())[-1][0]))
