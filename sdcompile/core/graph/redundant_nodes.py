"""sdcompile's equivalent of MindIE-SD's ReduandantNodeEliminationPass (passes/redundant_node_elimination_pass.py
in 3.1.0), which MindieSDBackend runs on the AOT graph right before its pattern pass and again after freezing.

Same three rules, so the graph captured here is the graph the pattern pass sees even without a target tree:
  1. `aten.clone.default` with no memory format (or preserve_format) -> its input;
  2. `aten.split_with_sizes.default` into one piece, used only as `getitem(.., 0)` -> its input;
  3. `aten.view.default` / `aten.reshape.default` whose output shape equals its input shape -> its input
     (shapes from `meta["val"]`).
A caller that has the target loaded can pass the target's own pass to `capture_graphs` instead.
"""

from __future__ import annotations

import operator
from typing import Any


def _shape(node: Any):
    val = getattr(node, "meta", {}).get("val")
    return getattr(val, "shape", None) if val is not None and hasattr(val, "dtype") else None


def eliminate_redundant_nodes(gm: Any) -> int:
    """Apply the three rules in place; returns how many nodes were removed (before dead-code elimination)."""
    import torch

    aten = torch.ops.aten
    graph = gm.graph
    removed = 0
    for node in list(graph.nodes):
        if node.target == aten.clone.default:
            memory_format = node.kwargs.get("memory_format")
            if memory_format is None or memory_format == torch.preserve_format:
                node.replace_all_uses_with(node.args[0])
                graph.erase_node(node)
                removed += 1
        elif node.target == aten.split_with_sizes.default:
            sizes = node.args[1]
            if isinstance(sizes, (list, tuple)) and len(sizes) == 1:
                users = list(node.users)
                if users and all(u.target == operator.getitem and len(u.args) == 2 and u.args[1] == 0 for u in users):
                    for user in users:
                        user.replace_all_uses_with(node.args[0])
                        graph.erase_node(user)
                    graph.erase_node(node)
                    removed += 1
        elif node.target in (aten.view.default, aten.reshape.default):
            before, after = _shape(node.args[0]), _shape(node)
            if before is not None and after is not None and before == after:
                node.replace_all_uses_with(node.args[0])
                graph.erase_node(node)
                removed += 1
    if removed:
        graph.eliminate_dead_code()
        gm.recompile()
    return removed
