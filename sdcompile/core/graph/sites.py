"""The ATen subgraph a located site becomes, found through node meta (module stack and source frames).

    class     nodes created under the site's module call (its children included)
    function  nodes whose source frames pass through the function, under the site's module
    inline    nodes whose source frames are the enclosing function at the lines computing the primitive
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from types import CodeType
from typing import Any

from sdcompile.core.graph.capture import StageGraph
from sdcompile.core.graph.nodes import format_node, frames, listing
from sdcompile.core.graph.tensor_origins import TensorOrigin


@dataclass(frozen=True)
class Subgraph:
    stage: str
    graph_index: int
    nodes: tuple[Any, ...]  # fx nodes, graph order
    inputs: tuple[tuple[str, str], ...]  # (node name, what it is) for values entering from outside
    shared: bool = False  # a graph dynamo compiled from the function itself, run by every site calling it

    def render(self) -> str:
        return listing(self.nodes)


def _last_line(code: CodeType) -> int:
    return max((line for _, _, line in code.co_lines() if line), default=code.co_firstlineno)


@dataclass(frozen=True)
class _NodeFacts:
    node: Any
    paths: frozenset[str]  # every model submodule it was created under
    innermost: str
    frames: tuple


_facts_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _facts(stage: StageGraph) -> list[_NodeFacts]:
    """Per-node facts of a stage, parsed once (sites are looked up many times per graph)."""
    cached = _facts_cache.get(stage.gm)
    if cached is None or cached[0] != len(stage.gm.graph.nodes):
        facts = [
            _NodeFacts(n, frozenset(p for p, _ in stage.module_stack(n)), stage.module_path(n), frames(n))
            for n in stage.gm.graph.nodes
            if n.op in ("call_function", "call_method", "call_module")
        ]
        cached = (len(stage.gm.graph.nodes), facts)
        _facts_cache[stage.gm] = cached
    return cached[1]


def _runs(frame_function: str, code_name: str) -> bool:
    """Whether a frame is the function named `code_name`, or the function dynamo resumes it in after a graph break
    inside it (`torch_dynamo_resume_in_<name>_at_<line>`, the rest of the same code)."""
    return frame_function == code_name or frame_function.startswith(f"torch_dynamo_resume_in_{code_name}_at_")


def site_nodes(stage: StageGraph, kind: str, site: str, code: CodeType | None = None,
               lines: tuple[int, ...] = ()) -> list:
    """Nodes of `stage` implementing one site; `code` is the function's (or enclosing function's) code object."""
    facts = _facts(stage)
    if kind == "class":
        if site == "" or stage.root == site or stage.root.startswith(site + "."):
            return [f.node for f in facts]
        return [f.node for f in facts if site in f.paths]
    if code is None:
        return []
    first, last = code.co_firstlineno, _last_line(code)
    found = []
    for fact in facts:
        if fact.innermost != site:
            continue
        for f in fact.frames:
            if f.file != code.co_filename or not _runs(f.function, code.co_name):
                continue
            if (kind == "function" and first <= f.line <= last) or (kind == "inline" and f.line in lines):
                found.append(fact.node)
                break
    return found


def is_detached(stage: StageGraph) -> bool:
    """A graph dynamo compiled from an inner function after a graph break, with no module context at all: it
    is reused for every module instance calling that function, so it belongs to no single site."""
    return not stage.root and not any(f.paths for f in _facts(stage))


def code_nodes(stage: StageGraph, codes: tuple[CodeType, ...], lines: tuple[int, ...] = ()) -> list:
    """Nodes whose source frames run through any of `codes` (at `lines`, when given)."""
    spans = [(c.co_filename, c.co_name, c.co_firstlineno, _last_line(c)) for c in codes]
    found = []
    for fact in _facts(stage):
        for f in fact.frames:
            if any(f.file == file and _runs(f.function, name) and first <= f.line <= last
                   and (not lines or f.line in lines) for file, name, first, last in spans):
                found.append(fact.node)
                break
    return found


def nodes_per_graph(stages: list[StageGraph], loc, path: str) -> list[tuple[StageGraph, list, bool]]:
    """(graph, nodes, shared) per graph holding the site at `path` of the located implementation `loc`. When module
    context finds it nowhere, the nodes running its code in the graphs dynamo compiled from a function itself after
    a graph break (shared: that graph has no module context and serves every site calling the function, so a
    pattern matched there replaces them all)."""
    code = loc.obj if loc.kind != "class" else None
    found = [(st, nodes, False) for st in stages if (nodes := site_nodes(st, loc.kind, path, code, loc.lines))]
    if found or loc.kind == "class":
        return found
    return [(st, nodes, True) for st in stages if is_detached(st) and (nodes := code_nodes(st, loc.codes, loc.lines))]


def subgraph(stage: StageGraph, nodes: list, shared: bool = False) -> Subgraph:
    members = set(nodes)
    inputs: dict[str, str] = {}
    for node in nodes:
        for arg in node.all_input_nodes:
            if arg in members or arg.name in inputs:
                continue
            inputs[arg.name] = describe_value(stage, arg)
    return Subgraph(stage.stage, stage.graph_index, tuple(nodes), tuple(inputs.items()), shared)


def describe_value(stage: StageGraph, node) -> str:
    origin: TensorOrigin | None = stage.origins.get(node.name)
    if node.op == "placeholder":
        return f"placeholder <- {origin.describe()}" if origin else "placeholder"
    if node.op == "get_attr":
        what = origin.describe() if origin else "constant"
        return f"get_attr {node.target} <- {what}"
    owner = stage.module_path(node)
    return f"computed ({format_node(node).split(' = ', 1)[1][:80]}{' in ' + owner if owner else ''})"


def tensor_evidence(stage: StageGraph, tensor: str, within: list | None = None, limit: int = 2) -> list[str]:
    """How a model tensor appears in a stage: its node (placeholder or get_attr) and the ops using it."""
    holders = [stage.node(name) for name, o in stage.origins.items() if o.name == tensor]
    if not holders:
        return []
    members = set(within) if within is not None else None
    out = []
    for holder in holders:
        kind = "placeholder" if holder.op == "placeholder" else f"get_attr {holder.target}"
        users = [u for u in holder.users if members is None or u in members][:limit]
        shown = "; ".join(format_node(u) for u in users) or "no users in this subgraph"
        out.append(f"{stage.stage}: {holder.name} is a {kind} <- {tensor}; used by {shown}")
    return out


def inputs_evidence(site: str, inputs) -> str:
    """The evidence line of a subgraph without module tensors: its inputs (name, what it is) at a site."""
    shown = "; ".join(f"{name}: {what}" for name, what in inputs[:4])
    return (f"before_freezing, site {site or '(model)'}: the subgraph's inputs are {shown}"
            + (" ..." if len(inputs) > 4 else ""))
