"""A PatternExpr as the matcher registered it: the op(s) it anchors its search on and every op target inside."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.graph.nodes import target_name
from sdcompile.core.torchcompat.pattern_matcher import pattern_expr_type


@dataclass(frozen=True)
class RegisteredPattern:
    name: str  # PatternBase.name()
    printed: str  # PatternPrettyPrinter output of the pattern as the matcher registered it
    anchor_targets: tuple[str, ...]  # the op(s) the matcher looks for first (the pattern's output)
    op_targets: tuple[str, ...]  # every op target the registered pattern contains


def _fns(expr) -> tuple:
    fns = getattr(expr, "fns", None)
    return tuple(fns) if fns else ()


def pattern_anchor_targets(expr) -> tuple[str, ...]:
    outputs = getattr(expr, "outputs", None)
    if outputs is not None:  # MultiOutputPattern: the first output anchors the search
        return tuple(target_name(f) for o in outputs[:1] if o is not None for f in _fns(o))
    return tuple(target_name(f) for f in _fns(expr))


def pattern_op_targets(expr, seen: set | None = None) -> set[str]:
    """Every op target inside a registered PatternExpr tree."""

    PatternExpr = pattern_expr_type()  # noqa: N806 - the class, named as torch names it

    seen = set() if seen is None else seen
    if id(expr) in seen:
        return set()
    seen.add(id(expr))
    found = {target_name(f) for f in _fns(expr)}
    children = list(getattr(expr, "outputs", None) or [])
    for attr in ("args", "kwargs"):
        value = getattr(expr, attr, None)
        if isinstance(value, dict):
            children.extend(value.values())
        elif isinstance(value, (list, tuple)):
            children.extend(value)
    stack = list(children)
    while stack:
        child = stack.pop()
        if isinstance(child, PatternExpr):
            found |= pattern_op_targets(child, seen)
        elif isinstance(child, (list, tuple)):
            stack.extend(child)
    return found
