"""Where one op's sites are in a model's graphs: the located implementations (a recorded forward) mapped onto the
graph the pattern pass sees (before freezing) and the one a custom graph pass sees (after freeze())."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.capture import GraphCapture, StageGraph
from sdcompile.core.graph.chain_extent import chains_from
from sdcompile.core.graph.nodes import op_name, short_path
from sdcompile.core.graph.sites import describe_value, nodes_per_graph, subgraph
from sdcompile.core.graph.stages import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
from sdcompile.core.zoo.source import extract_source, line_ranges
from sdcompile.phases.scaffold.results import Why
from sdcompile.util.reasons import Reason


@dataclass(frozen=True)
class SiteGraph:
    """One site (a submodule running one implementation) as nodes of the captured graphs."""

    implementation: str  # "torch.nn.RMSNorm"
    qualified_name: str  # "torch.nn.modules.normalization.RMSNorm"
    kind: str  # "class" | "function" | "inline"
    source: str  # "torch/nn/modules/normalization.py:343-436 (ran: 423, 427)"
    path: str  # "transformer_blocks.0.attn.norm_q"
    module_class: str
    graph_index: int | None  # the captured graph holding it (None when no graph or several do)
    text: str  # its before-freezing nodes, rendered with source comments
    inputs: tuple[tuple[str, str], ...]  # (node, what it is) of the values entering it, before freezing
    fused_ops: tuple[str, ...]  # fused NPU ops the model graph already calls here (diffusers' NPU branch)
    problem: Reason | None  # why it cannot be used (Why.NOT_IN_GRAPH, Why.SPLIT_BY_BREAK)
    producer_only: bool = False  # an AdaLN class or function that only computes shift/scale/gate: nothing to replace
    # a site of an AdaLN class that modulates elsewhere but ran no modulation here (Mochi's norm with a tanh gate)
    unmodulated: bool = False
    # live fx nodes, never reported
    before: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    after: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    before_stage: StageGraph | None = field(default=None, compare=False, repr=False)
    after_stage: StageGraph | None = field(default=None, compare=False, repr=False)

    @property
    def not_a_site(self) -> bool:
        """An AdaLN location with no chain to replace: a producer, or a call that ran no modulation."""
        return self.producer_only or self.unmodulated

    @property
    def node_names(self) -> frozenset[str]:
        return frozenset(n.name for n in self.before)

    @property
    def label(self) -> str:
        return self.path or "(the model itself)"


def _nodes_per_graph(stages: list[StageGraph], loc, path: str) -> list[tuple[StageGraph, list]]:
    return [(st, nodes) for st, nodes, _shared in nodes_per_graph(stages, loc, path)]


def _source(loc, lines_run: dict) -> str:
    extract = extract_source(loc, lines_run)
    if extract is None:
        return short_path(loc.file)
    ran = line_ranges(extract.lines_run)
    return f"{extract.location} (ran: {ran})" if ran else extract.location


def calls(nodes: list) -> list[list]:
    """A function site's nodes as one list per call: the weakly connected parts of the subgraph (in graph order).
    An attention module applying one RoPE function to q and then to k holds two chains that share only inputs;
    each is one replacement."""
    parent = {n: n for n in nodes}

    def root(n):
        while parent[n] is not n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n in nodes:
        for a in n.all_input_nodes:
            if a in parent:
                parent[root(a)] = root(n)
    parts: dict = {}
    for n in nodes:
        parts.setdefault(root(n), []).append(n)
    return list(parts.values())


def cones(nodes: list) -> list[list]:
    """A subgraph's nodes as one list per output (a node nothing inside it reads): the output and what it is
    computed from inside the subgraph, in graph order. Nodes several outputs read (a table unsqueezed once for q
    and k, or shared by the common-subexpression elimination freeze() runs, even with other blocks) belong to
    none: each chain takes them as inputs."""
    members = set(nodes)
    outputs = [n for n in nodes if not any(u in members for u in n.users)]
    found = []
    for out in outputs:
        cone, stack = set(), [out]
        while stack:
            n = stack.pop()
            if n in members and n not in cone:
                cone.add(n)
                stack.extend(n.all_input_nodes)
        found.append(cone)
    if len(found) < 2:
        return [list(nodes)]
    shared = {n for cone in found for n in cone if sum(n in other for other in found) > 1}
    return [[n for n in nodes if n in cone and n not in shared] for cone in found]


def _parts(loc, nodes: list, chain_start: Callable[[Any], bool] | None) -> list[list]:
    """A site's nodes split per replacement: a function's calls (q's and k's RoPE, or inline code's), or the chains
    an inline or class site holds from a node `chain_start` accepts on (a block applying two modulations); one part
    when there is no split.
    A function's call with several outputs (q and k rotated in one call, or two calls whose table views freeze()
    merged) is one part per output."""
    if loc.kind == "function" or (loc.kind == "inline" and chain_start is None):
        # inline code computing the op for q and then for k (an attention processor's RoPE) splits the same way
        return [cone for part in calls(nodes) for cone in cones(part)]
    if chain_start is None:
        return [nodes]

    parts = chains_from(nodes, chain_start)
    return parts if len(parts) > 1 else [nodes]


def _per_call(loc, path: str, before: list, after: list,
              chain_start: Callable[[Any], bool] | None) -> list[tuple[str, list, list]]:
    """(path, before-freezing nodes, after-freezing nodes) per call of a function site, or per chain of a site
    holding several; one entry otherwise. Paths of several get `#k` (the k-th in graph order)."""
    if len(before) != 1:
        return [(path, before, after)]
    stage, nodes = before[0]
    parts = _parts(loc, nodes, chain_start)
    if len(parts) < 2:
        return [(path, before, after)]
    after_parts = [_parts(loc, ns, chain_start) for _st, ns in after]
    out = []
    for k, part in enumerate(parts, start=1):
        paired = [(st, ps[k - 1]) for (st, _ns), ps in zip(after, after_parts, strict=True) if len(ps) == len(parts)]
        out.append((f"{path}#{k}", [(stage, part)], paired))
    return out


def site_graphs(located: list, lines_run: dict, capture: GraphCapture,
                fused_targets: frozenset[str], chain_start: Callable[[Any], bool] | None = None) -> list[SiteGraph]:
    """Every site of every located implementation of one op, in the order `locate` found them. `lines_run` is
    the recorded forward's executed lines (`RunTrace.lines`); `chain_start`: whether a node starts a chain of the op
    (chain_extent.chain_start), by which a site holding several chains is split."""
    before_stages = capture.stage(STAGE_BEFORE_FREEZING)
    after_stages = capture.stage(STAGE_AFTER_FREEZING)
    found = []
    for loc in located:
        source = _source(loc, lines_run)
        for site in loc.sites:
            before = _nodes_per_graph(before_stages, loc, site.path)
            after = _nodes_per_graph(after_stages, loc, site.path)
            # a producer has no chain to split: one row per module
            parts = [(site.path, before, after)] if loc.producer_only or not site.modulates else _per_call(
                loc, site.path, before, after, chain_start)
            for path, part_before, part_after in parts:
                found.append(_site_graph(loc, site, path, source, part_before, part_after, fused_targets))
    return _distinct_paths(found)


def _distinct_paths(found: list[SiteGraph]) -> list[SiteGraph]:
    """Sites keyed by path stay apart: a producer sharing its module's path with a site there (LTX 2's
    get_mod_params in the block whose inline code modulates) is named by its implementation too."""
    from dataclasses import replace

    taken = {s.path for s in found if not s.not_a_site}
    return [replace(s, path=f"{s.path} ({s.implementation.rsplit('.', 1)[-1]})")
            if s.not_a_site and s.path in taken else s for s in found]


def _site_graph(loc, site, path: str, source: str, before: list, after: list, fused_targets) -> SiteGraph:
    problem = None
    if not before:
        problem = Reason.of(Why.NOT_IN_GRAPH)
    elif len(before) > 1:
        problem = Reason.of(Why.SPLIT_BY_BREAK, graphs=len(before))
    stage, nodes = before[0] if before else (None, [])
    sub = subgraph(stage, nodes) if stage is not None else None
    after_stage, after_nodes = next(((st, ns) for st, ns in after if stage is not None
                                     and st.graph_index == stage.graph_index), (None, []))
    fused = tuple(sorted({op_name(n) for n in nodes if op_name(n) in fused_targets}))
    return SiteGraph(
        implementation=loc.display_name,
        qualified_name=loc.qualified_name,
        kind=loc.kind,
        source=source,
        path=path,
        module_class=site.module_class,
        graph_index=stage.graph_index if stage is not None and problem is None else None,
        text=sub.render() if sub is not None else "",
        inputs=sub.inputs if sub is not None else (),
        fused_ops=fused,
        problem=problem,
        producer_only=loc.producer_only,
        unmodulated=not site.modulates,
        before=tuple(nodes),
        after=tuple(after_nodes),
        before_stage=stage,
        after_stage=after_stage,
    )


def input_origins(stage: StageGraph) -> dict[str, str]:
    """node name -> what it holds, for every placeholder and get_attr of a stage."""

    return {name: describe_value(stage, stage.node(name)) for name in stage.origins}
