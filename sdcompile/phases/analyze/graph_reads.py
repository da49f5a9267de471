"""What the captured graphs show of one implementation: each site's ATen subgraph per stage, how each stage holds
the module tensors it reads, the tensors only its child modules read, and the graph evidence for its path."""

from __future__ import annotations

from sdcompile.core.graph.sites import inputs_evidence, nodes_per_graph, subgraph, tensor_evidence
from sdcompile.core.graph.stages import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING, STAGE_DYNAMO
from sdcompile.phases.analyze.results import Held, Holder, TensorSource, Why
from sdcompile.util.reasons import Reason


def site_subgraphs(stages, loc, site: str) -> list:
    """The site's nodes in each graph (core.graph.sites.nodes_per_graph: those of a graph compiled from the function
    itself after a graph break, shared by the sites calling it, when module context finds none)."""

    return [subgraph(st, nodes, shared) for st, nodes, shared in nodes_per_graph(stages, loc, site)]


def no_nodes_note(capture, loc, site: str) -> Reason:
    """Why a site has no nodes in the graph the pattern pass sees."""

    if not capture.graphs:
        return Reason.of(Why.NOT_CAPTURED, backend=capture.metadata.backend)
    if site_subgraphs(capture.stage(STAGE_DYNAMO), loc, site):
        return Reason.of(Why.DEAD_CODE)
    return Reason.of(Why.OUTSIDE_COMPILED)


def _held(capture, stage: str, tensor: str) -> Held:
    if not capture.graphs:
        return Held(Holder.NOT_CAPTURED)
    if stage not in capture.metadata.stages:  # the after-freezing stage of a capture that stopped before freeze()
        return Held(Holder.NOT_FROZEN)
    for st in capture.stage(stage):
        for name, origin in st.origins.items():
            if origin.name == tensor:
                node = st.node(name)
                holder = Holder.PLACEHOLDER if node.op == "placeholder" else Holder.GET_ATTR
                return Held(holder, name, str(node.target))
    return Held(Holder.ABSENT)


def tensor_sources(loc, capture) -> tuple[TensorSource, ...]:
    """Each module tensor the implementation reads, and what holds it before and after freeze()."""

    out = []
    for read in loc.reads:
        before = _held(capture, STAGE_BEFORE_FREEZING, read.tensor)
        after = _held(capture, STAGE_AFTER_FREEZING, read.tensor)
        if after.holder is Holder.ABSENT and before.holder is Holder.PLACEHOLDER:
            # freeze() constant-folded what it feeds (e.g. `table[None]`) into a new _frozen_param* constant
            after = Held(Holder.FOLDED)
        out.append(TensorSource(read.tensor, read.kind, f"{read.by} line {read.line}", before, after))
    return tuple(out)


def child_tensors(loc, trace) -> tuple[str, ...]:
    """Module tensors read only by the children of a class implementation's sites (e.g. an AdaLN's linear)."""
    if loc.kind != "class":
        return ()
    prefixes = tuple(f"{s.path}." for s in loc.sites if s.path)
    found = []
    for call in trace.calls:
        if call.site.startswith(prefixes):
            found.extend(t for t in call.tensors_read if t not in found)
    return tuple(found)


def evidence(tensors, per_site, capture) -> tuple[str, ...]:
    """The graph lines behind the path: where the first module tensor sits in each stage, or, without module
    tensors, the first site's subgraph inputs."""

    out: list[str] = []
    if tensors:
        first = tensors[0]
        site = next((p for p in per_site if first.tensor.startswith(f"{p[0]}.") or not p[0]), per_site[0])
        for stage, subs in ((STAGE_BEFORE_FREEZING, site[1]), (STAGE_AFTER_FREEZING, site[2])):
            within = [n for s in subs for n in s.nodes] or None
            for st in capture.stage(stage):
                out.extend(tensor_evidence(st, first.tensor, within))
        return tuple(out)
    for path, before, _after in per_site[:1]:
        for sub in before:
            out.append(inputs_evidence(path, sub.inputs))
    return tuple(out)
