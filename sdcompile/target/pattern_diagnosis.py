"""Where a registered pattern and a traced graph part: the first node at which they disagree.

Judged by the pattern the matcher actually registered (the PatternExpr in the pass's pattern dict), never by
the search function's source: `register_replacement` traces the search function with decompositions of its
own choosing, so the registered form can differ from what the search function's code suggests.

Two stages, as in torch's matcher:
  structure  the graph is walked from a node in lockstep with the pattern from its output op, comparing targets,
             argument counts and literal arguments; torch's own `pattern.match(node)` message is kept beside
             sdcompile's reading of it
  re-trace   the structure matches but `register_replacement`'s check re-traces the search function with the
             matched inputs' real shapes/dtypes and compares again (constants such as eps are compared exactly
             here); the re-traced pattern is matched against the node to say where that one parts
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from sdcompile.target.loader import describe_error, pattern_anchor_targets, target_name

MAX_TEXT = 240


@dataclass(frozen=True)
class Divergence:
    stage: str  # "structure", "re-trace", "matches" (nothing to report) or "error"
    graph_node: str | None  # "mul_1 = aten.mul.Tensor(getitem, add)"
    pattern_node: str | None  # "CallFunction(aten.add.Tensor, mul_Tensor_1, unsqueeze_default_1)"
    reason: str  # one sentence
    torch_message: str | None = None  # torch's FailedMatch text, when torch's matcher was asked


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _arg_text(value) -> str:
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return value.name
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_arg_text(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def node_text(node) -> str:
    import torch.fx

    if not isinstance(node, torch.fx.Node):
        return _short(repr(node))
    if node.op == "placeholder":
        return f"{node.name} (graph input)"
    if node.op == "get_attr":
        return f"{node.name} = get_attr {node.target}"
    args = [_arg_text(a) for a in node.args] + [f"{k}={_arg_text(v)}" for k, v in node.kwargs.items()]
    return _short(f"{node.name} = {target_name(node.target)}({', '.join(args)})")


def pattern_text(expr) -> str:
    from torch._inductor.pattern_matcher import PatternPrettyPrinter

    try:
        return _short(expr.pretty_print(PatternPrettyPrinter()))
    except Exception:  # noqa: BLE001 - a printer gap must not hide the divergence itself
        return _short(repr(expr))


def _is_wildcard(expr) -> bool:
    from torch._inductor import pattern_matcher as pm

    return isinstance(expr, (pm.KeywordArg, pm.Arg, pm.Ignored, pm.ExclusiveKeywordArg))


def first_divergence(expr, node, seen: set | None = None) -> Divergence | None:
    """Walk `expr` (a registered PatternExpr) and `node` together from the output; the first disagreement."""
    import torch.fx
    from torch._inductor import pattern_matcher as pm

    seen = set() if seen is None else seen
    if _is_wildcard(expr) or id(expr) in seen:
        return None
    seen.add(id(expr))
    if isinstance(expr, pm.ListOf):
        if not isinstance(node, (list, tuple)):
            return Divergence("structure", node_text(node), pattern_text(expr), "the pattern expects a list here")
        for item in node:
            found = first_divergence(expr.pattern, item, seen)
            if found:
                return found
        return None
    fns = getattr(expr, "fns", None)
    if fns is None:  # another PatternExpr kind: leave the verdict to torch's matcher
        return None
    if not isinstance(node, torch.fx.Node) or node.op not in ("call_function", "call_method", "call_module"):
        what = "a graph input" if isinstance(node, torch.fx.Node) and node.op == "placeholder" else node_text(node)
        return Divergence("structure", node_text(node), pattern_text(expr),
                          f"the pattern expects {expr.fns_repr()} where the graph has {what}")
    if node.target not in fns:
        return Divergence("structure", node_text(node), pattern_text(expr),
                          f"op mismatch: the graph has {target_name(node.target)}, the pattern expects "
                          f"{expr.fns_repr()}{decomposition_hint(node)}")
    if len(node.args) != len(expr.args):
        return Divergence("structure", node_text(node), pattern_text(expr),
                          f"{target_name(node.target)} has {len(node.args)} positional arguments in the graph and "
                          f"{len(expr.args)} in the pattern (args vs kwargs, or a different overload use)")
    pairs = list(zip(expr.args, node.args, strict=True))
    for key, pattern_value in expr.kwargs.items():
        if key not in node.kwargs:
            return Divergence("structure", node_text(node), pattern_text(expr),
                              f"the pattern passes {key}= to {target_name(node.target)}, the graph does not")
        pairs.append((pattern_value, node.kwargs[key]))
    for pattern_arg, graph_arg in pairs:
        if isinstance(pattern_arg, pm.PatternExpr):
            found = first_divergence(pattern_arg, graph_arg, seen)
            if found:
                return found
        elif isinstance(pattern_arg, (list, tuple)) and isinstance(graph_arg, (list, tuple)):
            if len(pattern_arg) != len(graph_arg):
                return Divergence("structure", node_text(node), pattern_text(expr),
                                  f"list argument of length {len(graph_arg)} in the graph, {len(pattern_arg)} in "
                                  "the pattern")
            for p_item, g_item in zip(pattern_arg, graph_arg, strict=True):
                if isinstance(p_item, pm.PatternExpr):
                    found = first_divergence(p_item, g_item, seen)
                    if found:
                        return found
                elif p_item != g_item:
                    return Divergence("structure", node_text(node), pattern_text(expr),
                                      f"constant mismatch: {g_item!r} in the graph, {p_item!r} in the pattern")
        elif isinstance(graph_arg, torch.fx.Node) or graph_arg != pattern_arg:
            return Divergence("structure", node_text(node), pattern_text(expr),
                              f"constant mismatch: {_arg_text(graph_arg)} in the graph, {pattern_arg!r} in the "
                              "pattern")
    return None


def decomposition_hint(node) -> str:
    """Say so when the graph keeps an op that inductor's decomposition table rewrites.

    register_replacement traces search functions with the decompositions it is given, by default inductor's
    `select_decomp_table()`; a backend that traces the model with fewer decompositions keeps such ops whole,
    and the two forms cannot match.
    """
    import operator

    from torch._inductor.decomposition import select_decomp_table

    if node.target is operator.getitem and node.args and hasattr(node.args[0], "target"):
        node = node.args[0]  # getitem(native_layer_norm, 0): the op is the producer
    try:
        decomposed = node.target in select_decomp_table()
    except Exception:  # noqa: BLE001 - a hint only
        return ""
    if not decomposed:
        return ""
    return (f" ({target_name(node.target)} is in inductor's decomposition table, which register_replacement "
            "traced the pattern with; the backend's graph keeps it whole)")


def _output_producers(graph) -> list:
    out = next(n for n in reversed(graph.nodes) if n.op == "output")
    import torch.fx

    producers = []
    for value in out.args[0] if isinstance(out.args[0], (list, tuple)) else [out.args[0]]:
        if isinstance(value, torch.fx.Node):
            producers.append(value)
    return producers


def diagnose(entry, graph, search_fn=None) -> Divergence:
    """Why `entry` (a registered PatternEntry) does not replace anything in `graph` (an fx.Graph)."""
    from torch._inductor import pattern_matcher as pm

    fns = tuple(getattr(entry.pattern, "fns", ()) or ())
    producers = _output_producers(graph)
    candidates = [n for n in graph.nodes if n.op == "call_function" and n.target in fns]
    if not candidates:
        start = producers[0] if producers else None
        anchors = ", ".join(pattern_anchor_targets(entry.pattern)) or "?"
        found = first_divergence(entry.pattern, start) if start is not None else None
        reason = (f"the pattern's output op ({anchors}) never occurs in the graph, so the matcher never starts; "
                  + (found.reason if found else "the graph has no output to compare"))
        return Divergence("structure", found.graph_node if found else None,
                          found.pattern_node if found else pattern_text(entry.pattern), reason)
    # Prefer the candidate that produces the graph's output (the module is the pattern), else the last one.
    node = next((n for n in producers if n in candidates), candidates[-1])
    try:
        match = entry.pattern.match(node)
    except Exception as exc:  # noqa: BLE001 - the matcher itself can throw on odd graphs
        return Divergence("error", node_text(node), pattern_text(entry.pattern),
                          f"torch's matcher raised {describe_error(exc)}")
    if not pm.is_match(match):
        found = first_divergence(entry.pattern, node)
        if found is None:
            return Divergence("structure", node_text(node), pattern_text(entry.pattern),
                              f"torch's matcher rejects it: {match}", str(match))
        return Divergence(found.stage, found.graph_node, found.pattern_node, found.reason, _short(str(match)))
    try:
        accepted = bool(entry.extra_check(match))
    except Exception as exc:  # noqa: BLE001
        return Divergence("error", node_text(node), pattern_text(entry.pattern),
                          f"the re-trace check raised {describe_error(exc)}")
    if accepted:
        return Divergence("matches", node_text(node), pattern_text(entry.pattern),
                          "torch's matcher accepts this node now; the pass did not apply it (a mutation-region or "
                          "CPU-input guard of the pass, or the node was consumed by another pattern first)")
    return _retrace_divergence(entry, match, node, search_fn)


def _retrace_divergence(entry, match, node, search_fn) -> Divergence:
    """Structure matched, the exact re-trace did not: re-trace like register_replacement does and compare."""
    base = ("the structure matches but register_replacement's re-trace with the real inputs (constants, dtypes "
            "and shapes compared exactly) rejects it")
    if search_fn is None:
        return Divergence("re-trace", node_text(node), pattern_text(entry.pattern), base)
    try:
        import torch
        from torch._inductor import pattern_matcher as pm
        from torch._inductor.decomposition import select_decomp_table

        argnames = list(inspect.signature(search_fn).parameters)
        args = []
        for name in argnames:
            value = match.kwargs.get(name)
            meta = value.meta.get("val") if hasattr(value, "meta") else value
            if isinstance(meta, torch.Tensor):
                args.append(torch.empty(tuple(int(s) for s in meta.shape), dtype=meta.dtype))
            else:
                args.append(meta)
        specific = pm.fwd_only(search_fn, args, get_decomp_fn=select_decomp_table)
        specific_pattern = pm.fx_to_pattern(specific, argnames=argnames, ignore_types=())
        found = first_divergence(specific_pattern, node)
        message = specific_pattern.match(node)
        if found is not None:
            return Divergence("re-trace", found.graph_node, found.pattern_node, f"{base}: {found.reason}",
                              None if pm.is_match(message) else _short(str(message)))
        return Divergence("re-trace", node_text(node), pattern_text(entry.pattern), base,
                          None if pm.is_match(message) else _short(str(message)))
    except Exception as exc:  # noqa: BLE001 - the plain verdict stands without the detail
        return Divergence("re-trace", node_text(node), pattern_text(entry.pattern),
                          f"{base} (re-tracing for detail failed: {describe_error(exc)})")
