"""Candidate sites of an op in a captured stage graph: every place a pattern for that op should match.

Two sources, merged:
  phase 1   the implementations `analyze` locates by running the model (zoo.locate) and the nodes each of
            their sites becomes in the graph (graph.sites, through node meta: module stack, source lines)
  anchors   every node of an op every implementation computes (its op file's [anchors]: `rsqrt` for
            RMSNorm), with the nodes within a few edges of it — so a site no phase-1 rule recognises is
            still examined
A site that already calls a fused op for the op (diffusers' own `npu_rms_norm` on an NPU host) is marked, so
no pattern is expected there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.nodes import module_path, op_name
from sdcompile.core.graph.pattern_chain import is_literal
from sdcompile.core.graph.sites import nodes_per_graph
from sdcompile.core.ops import OPS, op_table, op_title
from sdcompile.util.choices import UnknownChoice


@dataclass(frozen=True)
class OpAnchors:
    op: str
    title: str
    anchors: tuple[str, ...]
    fused: tuple[str, ...]
    groups: tuple[str, ...]  # fused ops whose presence in a replacement makes a group this op's
    radius: int
    rotation_writes: tuple[str, ...] = ()  # anchors that count only when they write a sum/difference of products
    table_builders: tuple[str, ...] = ()  # an anchor taking one of these ops' output builds a table (no candidate)
    modulated: tuple[str, ...] = ()  # anchors that count only when their output is modulated (candidates._scaled)


def op_anchors(op: str) -> OpAnchors:
    if op not in OPS:
        raise UnknownChoice("op", op, OPS, message=f"unknown op {op!r} for debug")
    e = op_table(op)["anchors"]
    return OpAnchors(op, op_title(op), tuple(e["anchors"]), tuple(e.get("fused", ())), tuple(e.get("groups", ())),
                     int(e.get("radius", 4)), tuple(e.get("rotation_writes", ())), tuple(e.get("table_builders", ())),
                     tuple(e.get("modulated", ())))


def op_of_fused(fused_targets) -> str | None:
    """The op whose group fused ops include one of `fused_targets` (what a replacement calls)."""
    for op in OPS:
        if set(op_anchors(op).groups) & set(fused_targets):
            return op
    return None


@dataclass
class CandidateSite:
    stage: Any  # graph.capture.StageGraph
    nodes: list  # the site's op nodes, graph order
    found_by: list[str] = field(default_factory=list)
    label: str = ""
    fused: list = field(default_factory=list)  # fused-op nodes of this op inside the site

    @property
    def graph_index(self) -> int:
        return self.stage.graph_index

    def starts(self) -> list:
        """Nodes the pattern's output may align with: the site's nodes and their direct users."""
        members = set(self.nodes)
        extra = []
        for node in self.nodes:
            for user in node.users:
                if user not in members and user.op == "call_function" and user not in extra:
                    extra.append(user)
        order = {n: i for i, n in enumerate(self.stage.gm.graph.nodes)}
        return sorted(list(self.nodes) + extra, key=lambda n: order[n])


def phase1_sites(stages, located) -> dict[int, list[CandidateSite]]:
    """One candidate per (implementation, site) analyze located, with the nodes it becomes in each stage (keyed by
    id(stage)); a site whose code ran in a graph compiled from the function itself after a graph break is that
    graph's nodes (sites.nodes_per_graph)."""

    sites: dict[int, list[CandidateSite]] = {}
    claimed: set = set()
    for loc in located:
        for site in loc.sites:
            where = site.path or "(the model itself)"
            for stage, nodes, shared in nodes_per_graph(stages, loc, site.path):
                if shared and nodes[0] in claimed:
                    continue  # one candidate for the shared graph: every calling site is the same nodes
                claimed.update(nodes)
                found = f"phase 1: {loc.display_name} ({loc.kind}) at {where}" + (
                    " (a graph compiled from the function itself)" if shared else "")
                sites.setdefault(id(stage), []).append(
                    CandidateSite(stage, list(nodes), [found], label=f"{where} — {loc.display_name}"))
    return sites


def anchor_sites(stage, anchors: OpAnchors, taken: list[CandidateSite]) -> list[CandidateSite]:
    """A candidate around every anchor / fused node not already inside a phase-1 site (those get the note)."""

    owner = {}
    for site in taken:
        for node in site.nodes:
            owner.setdefault(node, site)
    found = []
    for node in stage.gm.graph.nodes:
        if node.op != "call_function":
            continue
        name = op_name(node)
        if name not in anchors.anchors and name not in anchors.fused:
            continue
        if name in anchors.rotation_writes and not _writes_rotation(node):
            continue
        if name in anchors.anchors and _builds_table(node, anchors.table_builders):
            continue
        if name in anchors.modulated and not _scaled(node):
            continue
        label = f"{'fused op' if name in anchors.fused else 'anchor'} {name} ({node.name})"
        site = owner.get(node)
        if site is None:
            region = _region(node, anchors.radius)
            site = CandidateSite(stage, region, [], label=f"{module_path(node) or '(model)'} — around {node.name}")
            found.append(site)
            for member in region:
                owner.setdefault(member, site)
        site.found_by.append(label)
        if name in anchors.fused and node not in site.fused:
            site.fused.append(node)
    return found


_CARRIES = ("aten.copy.default", "aten._to_copy.default", "prims.convert_element_type.default")


def _writes_rotation(write) -> bool:
    """Whether the value an indexed write stores (its argument 1, through copies and casts) is a sum or difference
    of two products: one lane pair of a rotation."""

    value = _source(write.args[1] if len(write.args) > 1 else None, _CARRIES)
    if getattr(value, "op", None) != "call_function" or op_name(value) not in ("aten.add.Tensor", "aten.sub.Tensor"):
        return False
    operands = [a for a in value.args[:2] if hasattr(a, "op")]
    return len(operands) == 2 and all(a.op == "call_function" and op_name(a) == "aten.mul.Tensor" for a in operands)


def _scaled(anchor) -> bool:
    """Whether the anchor's output (through getitem, casts and views) is modulated: multiplied by `1 + scale`, or
    multiplied and then shifted by a value not computed from it. A norm feeding a projection is not, nor is a
    q/k norm whose output RoPE rotates (`x * cos + rotate(x) * sin`: what it adds is computed from x)."""

    def carried(node):  # node and the values carrying it on unchanged
        found, frontier = [], [node]
        while frontier:
            n = frontier.pop()
            found.append(n)
            frontier += [u for u in n.users if u.op == "call_function" and (op_name(u) == "getitem"
                                                                              or op_name(u) in _VIEWS)]
        return found

    for value in carried(anchor):
        for mul in (u for u in value.users if u.op == "call_function" and op_name(u) == "aten.mul.Tensor"):
            factor = next((a for a in mul.args[:2] if hasattr(a, "op") and a is not value), None)
            if factor is None:
                continue
            factor = _source(factor, _VIEWS)
            if op_name(factor) == "aten.add.Tensor" and any(is_literal(a, 1) for a in factor.args[:2]):
                return True  # (1 + scale)
            for product in carried(mul):
                for add in (u for u in product.users if u.op == "call_function" and op_name(u) == "aten.add.Tensor"):
                    other = next((a for a in add.args[:2] if hasattr(a, "op") and a is not product), None)
                    if other is not None and not _computed_from(other, anchor):
                        return True  # + shift
    return False


def _computed_from(value, source) -> bool:
    """Whether `source` is among the nodes `value` is computed from."""
    seen, frontier = set(), [value]
    while frontier:
        n = frontier.pop()
        if n is source:
            return True
        if n in seen:
            continue
        seen.add(n)
        frontier.extend(n.all_input_nodes)
    return False


_VIEWS = ("aten.view.default", "aten.reshape.default", "aten.unsqueeze.default", "aten.expand.default",
          "aten.select.int", "aten.slice.Tensor", *_CARRIES)


def _builds_table(anchor, builders: tuple[str, ...]) -> bool:
    """Whether the anchor's first argument is (through views and casts) the output of a table-building op: a neg
    of a sin of positions is a RoPE table being built, not a rotation."""

    value = _source(anchor.args[0] if anchor.args else None, _VIEWS)
    return getattr(value, "op", None) == "call_function" and op_name(value) in builders


def _source(value, through: tuple[str, ...]):
    """The node `value` is computed from through `through` ops (a copy's source is its last argument)."""

    while getattr(value, "op", None) == "call_function" and op_name(value) in through:
        value = value.args[-1] if op_name(value) == "aten.copy.default" else value.args[0]
    return value


def _region(anchor, radius: int) -> list:
    """Op nodes within `radius` edges of `anchor` (arguments and users), graph order."""
    seen = {anchor}
    frontier = [anchor]
    for _ in range(radius):
        nxt = []
        for node in frontier:
            for other in list(node.all_input_nodes) + list(node.users):
                if other not in seen and other.op == "call_function":
                    seen.add(other)
                    nxt.append(other)
        frontier = nxt
    order = {n: i for i, n in enumerate(anchor.graph.nodes)}
    return sorted(seen, key=lambda n: order[n])


def whole_graph_site(stage, label: str) -> CandidateSite:
    """The whole graph as one site (a unit module whose forward is a pattern's search function)."""
    nodes = [n for n in stage.gm.graph.nodes if n.op == "call_function"]
    return CandidateSite(stage, nodes, [label], label=label)


def candidate_sites(stages, anchors: OpAnchors, located=()) -> list[CandidateSite]:
    """Every candidate site of the op in `stages` (one StageGraph per captured graph), graph order."""
    out: list[CandidateSite] = []
    stages = list(stages)
    per_stage = phase1_sites(stages, located) if located else {}
    for stage in stages:
        first = per_stage.get(id(stage), [])
        out.extend(first)
        out.extend(anchor_sites(stage, anchors, first))
    for site in out:  # fused ops inside phase-1 sites that no anchor walk visited
        for node in site.nodes:
            from sdcompile.core.graph.nodes import op_name

            if op_name(node) in anchors.fused and node not in site.fused:
                site.fused.append(node)
    order = {id(s): (s.graph_index, _first_index(s)) for s in out}
    return sorted(out, key=lambda s: order[id(s)])


def _first_index(site: CandidateSite) -> int:
    order = {n: i for i, n in enumerate(site.stage.gm.graph.nodes)}
    return min((order[n] for n in site.nodes), default=0)
