"""Why a pattern did not replace its own search function: debug's alignment of the pattern as registered with the
graph the pass received (graph.pattern_graph, graph.align, graph.mismatch through phases.debug.sites), read as a
Divergence: the first differing node pair, its mismatch type and the fix."""

from __future__ import annotations

import dataclasses

from sdcompile.core.graph.candidates import whole_graph_site
from sdcompile.core.graph.capture import StageGraph
from sdcompile.core.graph.pattern_graph import trace_registered
from sdcompile.core.graph.stages import STAGE_BEFORE_FREEZING
from sdcompile.core.target.failures import describe_error
from sdcompile.phases.debug.sites import align_pattern
from sdcompile.phases.verify.results import Divergence


def diagnose(target, group: str, name: str, call, entry, capture, graph_index: int, replacements: int) -> Divergence:
    """Where pattern `name` (its registration `call` and registered `entry`) and the graph the pass received in
    `capture` (a loader.PassCapture) part: debug's alignment over the whole graph, as debug reads a unit site."""
    import torch

    try:
        pattern = trace_registered(name, call, entry)
    except Exception as exc:  # noqa: BLE001 - the verdict (no replacement) stands without the detail
        return Divergence("error", None, None, "tracing the search function as register_replacement did failed: "
                          f"{describe_error(exc, target.tree.root)}", None)
    gm = torch.fx.GraphModule(capture.graph_module, capture.before_graph)
    stage = StageGraph(STAGE_BEFORE_FREEZING, graph_index, gm, {}, "")
    site = whole_graph_site(stage, f"the search function of {name}")
    context = {"stage": STAGE_BEFORE_FREEZING, "group": group, "unit_hits": replacements, "model_hits": None}
    try:
        at = align_pattern(pattern, site, {}, 0, context)
    except Exception as exc:  # noqa: BLE001 - as above
        return Divergence("error", None, None, f"aligning the pattern with the graph failed: "
                          f"{describe_error(exc, target.tree.root)}", None)
    first = at.first
    if first is not None:
        return Divergence(first.stage, first.model.text if first.model else None,
                          first.pattern.text if first.pattern else None, first.detail, at.torch_says, at.start,
                          at.matched, at.total, at.mismatch)
    stage_word = "matches" if at.verdict == "accepted" else "unexplained"
    reason = at.notes[-1] if at.notes else at.torch_says
    if at.mismatch is not None:  # a pattern input bound to a constant, which torch's matcher rejects
        stage_word, reason = "structure", at.mismatch.evidence[0]
    return Divergence(stage_word, None, None, reason, at.torch_says, at.start, at.matched, at.total, at.mismatch)


def credit_siblings(divergence: Divergence, name: str, hits_by_pattern: dict[str, int]) -> Divergence:
    """A pattern that accepts the graph but found it already replaced by a sibling registered earlier says so."""
    siblings = [k for k, v in hits_by_pattern.items() if v and k != name]
    if divergence.stage != "matches" or not siblings:
        return divergence
    return dataclasses.replace(
        divergence,
        reason=f"this pattern accepts the graph too, but {', '.join(siblings)} (registered earlier in the "
        "group) matched it first: on this graph the variants are interchangeable")
