"""What a pattern pass replaced, recorded as it happens: one Replacement per application of a registered entry.
The group runner (group_runner.py) and a compile session (compile_session.py) both record through `observe`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sdcompile.core.graph.nodes import target_name
from sdcompile.core.target.graph_snapshots import module_path


@dataclass(frozen=True)
class Replacement:
    """One replacement a pass applied."""

    group: str  # "" when the recorder does not know the pattern's group
    pattern: str  # PatternBase.name(), or a GraphPatternEntry handler's name
    node: str  # the matched node the replacement anchored on (the pattern's output in the graph)
    target: str  # its op
    nodes: tuple[str, ...]  # every node of the match
    stack_trace: str  # the anchor's recorded source stack (model code that produced it), "" when absent
    module_path: str  # the submodule it ran in ("blocks.0.attn1.norm_q"), "" when the graph did not keep it


def observe(entry, group: str, pattern: str, record: Callable[[Replacement], None]) -> None:
    """Make `entry` (a registered PatternEntry) report each replacement it applies to `record`; the nodes it
    inserts keep the anchor's source (torch 2.13 copies it itself, torch 2.9 does not), so a fused call in a final
    graph still names its model line."""
    original = entry.apply

    def apply(match, graph, node, *args, **kwargs):
        meta = getattr(node, "meta", {})
        nodes = tuple(n.name for n in getattr(match, "nodes", ()) if hasattr(n, "name"))
        record(Replacement(group, pattern, getattr(node, "name", str(node)), target_name(getattr(node, "target", "")),
                           nodes, str(meta.get("stack_trace") or ""), module_path(meta)))
        before = set(getattr(graph, "nodes", ()))
        result = original(match, graph, node, *args, **kwargs)
        _inherit_site(graph, before, meta)
        return result

    entry.apply = apply


def _inherit_site(graph, before: set, meta: dict) -> None:
    for new in getattr(graph, "nodes", ()):
        if new not in before and not new.meta.get("stack_trace"):
            for key in ("stack_trace", "nn_module_stack"):
                if meta.get(key):
                    new.meta[key] = meta[key]
