"""One site, one group: every pattern of the group aligned from its output (graph.align), torch's own matcher
asked at the same node, the first difference classified (graph.mismatch), as reportable views."""

from __future__ import annotations

import sys
from collections import Counter

from sdcompile.core.graph import align as A
from sdcompile.core.graph import mismatch as M
from sdcompile.core.graph.align import is_node
from sdcompile.core.graph.alignment import TARGET
from sdcompile.core.graph.mismatch import source_line
from sdcompile.core.graph.nodes import format_node, op_name
from sdcompile.core.graph.pattern_graph import decomposed_form, equivalence, replaced_with_table, retrace_exact
from sdcompile.core.target.failures import describe_error
from sdcompile.core.target.package_import import PACKAGE
from sdcompile.core.torchcompat.pattern_matcher import failed_match_text, is_match
from sdcompile.phases.debug.results import (
    FirstMismatch,
    GroupAtSite,
    MismatchVerdict,
    NodeView,
    PairView,
    PatternAtSite,
)


# ------------------------------------------------------------------------------------------------ views
def node_view(node, origins=None) -> NodeView | None:
    if node is None:
        return None
    if not is_node(node):
        return NodeView(repr(node), "literal", repr(node), "")
    holds = None
    if origins is not None and node.op in ("placeholder", "get_attr"):
        origin = origins.get(node.name)
        holds = origin.describe() if origin is not None else None
    elif origins is None and node.op == "placeholder":
        holds = f"pattern input {node.target}"
    return NodeView(node.name, op_name(node), format_node(node), source_line(node), holds)


def _pair_views(alignment, origins) -> tuple[PairView, ...]:
    return tuple(PairView(p.status, p.field, node_view(p.pattern), node_view(p.model, origins), p.detail)
                 for p in alignment.pairs)


def _torch_verdict(entry, start) -> tuple[str, bool | None]:
    """torch's own matcher on `start`: its FailedMatch text, or whether the re-trace check accepts the match."""

    fns = getattr(entry.pattern, "fns", None)
    if fns is not None and start.target not in fns:
        return (f"never starts here: the pattern's output op is {entry.pattern.fns_repr()}, the node is "
                f"{start.target}"), False
    try:
        match = entry.pattern.match(start)
    except Exception as exc:  # noqa: BLE001 - the matcher can throw on odd graphs
        return f"the matcher raised {describe_error(exc)}", None
    if not is_match(match):
        return f"rejects: {' '.join(failed_match_text(match).split())[:300]}", False
    try:
        accepted = bool(entry.extra_check(match))
    except Exception as exc:  # noqa: BLE001
        return f"structure matches; the re-trace check raised {describe_error(exc)}", None
    if accepted:
        return "accepts (structure and the exact re-trace)", True
    return "rejects: the structure matches, register_replacement's re-trace with the real values does not", False


# ------------------------------------------------------------------------------------------------ one site
def align_pattern(pattern, site, origins, replaced: int, ctx_base: dict) -> PatternAtSite:
    """Align one registered pattern (a graph.pattern_graph.PatternGraph) at one site; classify the first difference.

    `origins` say what the site's placeholder / get_attr nodes hold, `replaced` is how often the pass replaced this
    pattern inside the site, `ctx_base` the rest of graph.mismatch.Context (stage, group, unit_hits, model_hits).
    Also what `sdcompile verify` uses to say why a pattern does not replace its own search function."""

    starts = site.starts()
    if pattern.equivalent is None:
        pattern.equivalent = equivalence(pattern)
    equivalent = pattern.equivalent
    structure = A.best_alignment(pattern.gm, starts, pattern.argnames, equivalent, frozenset(site.nodes))
    if structure is None:
        return PatternAtSite(pattern.name, "mismatch", None, 0, 0, "no node to start from", None, (), None, ())
    alignment, notes = structure, []
    if structure.clean:
        try:
            specific = retrace_exact(pattern, structure.bindings)
        except Exception as exc:  # noqa: BLE001 - the re-trace fails like register_replacement's check would
            specific = None
            notes.append(f"re-tracing the search function with the matched values failed: {exc}")
        if specific is not None:
            exact = A.align(specific, structure.start, exact=True, argnames=pattern.argnames, equivalent=equivalent)
            if not exact.clean:
                alignment = exact
    torch_says, accepted = (_torch_verdict(pattern.entry, structure.start) if pattern.entry is not None
                            else ("no registered entry", None))
    placeholders = [n for n in pattern.gm.graph.nodes if n.op == "placeholder"]
    input_names = {p: pattern.argnames[i] if i < len(pattern.argnames) else str(p.target)
                   for i, p in enumerate(placeholders)}
    frozen_inputs = {k: v for k, v in structure.bindings.items() if A.is_node(v) and v.op == "get_attr"}
    for name, node in frozen_inputs.items():
        notes.append(f"pattern input {name} binds get_attr {node.target} ({_holds(origins, node)}): torch's matcher "
                     "binds a pattern input to any node, a frozen constant included")
    first, verdict_obj = alignment.first, None
    if first is not None:
        decomposed = decomposed_form(first.model, pattern) if first.field == TARGET and A.is_op(first.model) \
            and first.pattern is not None else None
        ctx = M.Context(input_names=input_names, bindings=structure.bindings, decomposed=decomposed,
                        matched=alignment.matched, pattern_output=pattern.output_node,
                        decompositions=pattern.decomposition_source.split(" (")[0],
                        torch_message=None if accepted else torch_says, origins=origins, **ctx_base)
        c = M.classify(first, ctx)
        evidence = c.evidence
        if c.cause == "decomposition":
            evidence += (_backend_table_check(pattern, site),)
        verdict_obj = MismatchVerdict(c.type, c.name, c.cause, c.path, c.fix, evidence)
    elif accepted is False and frozen_inputs:
        name, node = next(iter(frozen_inputs.items()))
        ctx = M.Context(origins=origins, torch_message=torch_says, **ctx_base)
        c = M.classify_accepted_constant(ctx, name, node)
        verdict_obj = MismatchVerdict(c.type, c.name, c.cause, c.path, c.fix, c.evidence)
    verdict = _verdict(replaced, first is not None, verdict_obj is not None, accepted, notes)
    first_view = _first_view(first, origins) if first is not None else None
    others = tuple(d.detail for d in alignment.differences[1:6])
    return PatternAtSite(pattern.name, verdict, structure.start.name, alignment.matched, alignment.total, torch_says,
                         first_view, others, verdict_obj, _pair_views(alignment, origins), tuple(notes))


def _verdict(replaced: int, differs: bool, classified: bool, accepted: bool | None, notes: list[str]) -> str:
    """A pattern's verdict at a site (notes say why when the alignment and the outcome disagree)."""
    if replaced:  # the pass's own replacement is the ground truth; the alignment only explains
        if differs:
            notes.append("the pass replaced here although the alignment found a difference; trust the replacement")
        return "replaced"
    if differs or classified:
        return "mismatch"
    if accepted:
        notes.append("torch's matcher accepts this node; the pass applied another pattern here first (an earlier "
                     "variant of the group) or a guard of the pass (mutation region, CPU input) skipped it")
        return "accepted"
    notes.append("sdcompile's alignment finds no difference and torch's matcher does not accept: see its message")
    return "mismatch"


def _first_view(first, origins) -> FirstMismatch:
    # a node present on one side only faces the node on the other side that takes its input directly
    pattern_side = first.pattern if first.pattern is not None else first.pattern_user
    model_side = first.model if first.model is not None else first.model_user
    return FirstMismatch(first.stage, first.field, first.kind, first.detail,
                         node_view(pattern_side), node_view(model_side, origins))


def _backend_table_check(pattern, site) -> str:
    """Register the pattern again with the backend's own decomposition table and say whether it then replaces
    this site: the decomposition fix, tried on a copy."""

    module = sys.modules.get(f"{PACKAGE}.compilation._custom_decomposition")
    table_fn = getattr(module, "select_custom_decomp_table", None) if module is not None else None
    name = "the target's select_custom_decomp_table" if table_fn is not None else "an empty table"
    table_fn = table_fn or dict
    cache = pattern.table_checks
    key = id(site.stage)
    if key not in cache:
        try:
            cache[key] = replaced_with_table(pattern, site.stage.gm, table_fn)
        except Exception as exc:  # noqa: BLE001 - the check is evidence, not the verdict
            cache[key] = f"could not run: {describe_error(exc)}"
    removed = cache[key]
    if isinstance(removed, str):
        return f"checked with {name}: {removed}"
    here = {n.name for n in site.starts()} & removed
    if here:
        return f"checked: registered with {name} ({len(table_fn())} entries), this pattern replaces this site"
    return (f"checked: registered with {name} ({len(table_fn())} entries), this pattern still does not replace "
            "this site: the table is not the only difference here")


def _holds(origins, node) -> str:
    origin = origins.get(node.name)
    return origin.describe() if origin is not None else "a constant"


def group_at_site(group: str, patterns: list, site, origins, replaced: Counter, ctx_base: dict,
                  shared: Counter | None = None) -> GroupAtSite:
    """The verdict of one group at one site; `patterns` are its PatternGraphs, `replaced` what its pass replaced
    inside the site (pattern -> count), `shared` replacements inside it credited to an overlapping site."""

    if site.fused:
        fused = ", ".join(sorted({op_name(n) for n in site.fused}))
        return GroupAtSite(group, "already fused", {}, None,
                           f"the model already calls {fused} here: nothing for a pattern to replace", None, ())
    results = tuple(align_pattern(p, site, origins, replaced.get(p.name, 0), ctx_base) for p in patterns)
    hits = {k: v for k, v in replaced.items() if v}
    if hits:
        names = ", ".join(f"{k} ×{v}" for k, v in hits.items())
        shown = next((r for r in results if r.pattern in hits), results[0] if results else None)
        return GroupAtSite(group, "matches", hits, None, f"replaced by {names}", shown.pattern if shown else None,
                           results)
    if shared:
        names = ", ".join(f"{k} ×{v}" for k, v in shared.items())
        shown = next((r for r in results if r.pattern in shared), results[0] if results else None)
        return GroupAtSite(group, "matches", {}, None,
                           f"replaced by {names}, counted at an overlapping site that holds the same nodes",
                           shown.pattern if shown else None, results)
    if not results:
        return GroupAtSite(group, "mismatch", {}, None, "the group registered no pattern", None, ())
    # closest: a classified difference, then one found only at the exact re-trace (the structure lined up),
    # then the largest share of the pattern lined up
    closest = max(results, key=lambda r: (r.mismatch is not None, r.first is not None and r.first.stage == "exact",
                                          r.matched / max(r.total, 1), -len(r.other_differences)))
    if closest.mismatch is not None:
        summary = f"type {closest.mismatch.type} ({closest.mismatch.name}): {closest.mismatch.fix}"
    elif closest.first is not None:
        summary = closest.first.detail
    else:
        summary = closest.torch_says
    return GroupAtSite(group, "mismatch", {}, closest.mismatch.type if closest.mismatch else None, summary,
                       closest.pattern, results)
