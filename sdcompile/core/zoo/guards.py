"""The conditions a line of a function runs under, read from its source: the `if`/`elif`/`else`, ternary,
`and`/`or`, `while`, `for` and `except` around it, and the early exits before it (`if x is None: return ...`).
Innermost first, so the first whose own line ran is the one that decided against it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from enum import StrEnum

_MAX_TEST = 160  # characters of a condition kept


class GuardKind(StrEnum):
    IF = "if"  # the line is in the body (holds: the test is true) or the else branch (false)
    TERNARY = "ternary"
    AND = "and"  # the line is in an operand of `a and b`: the operands before it are true
    OR = "or"  # ... of `a or b`: the operands before it are false
    WHILE = "while"
    FOR = "for"  # the line is in a loop's body: it runs when the loop has items
    EXCEPT = "except"  # the line is in an except handler: it runs when the try body raises
    EARLY_EXIT = "early exit"  # an earlier `if test: return/raise/continue/break` leaves first when true


@dataclass(frozen=True)
class Guard:
    kind: GuardKind
    test: str  # the condition's source (ast.unparse), at most _MAX_TEST characters
    holds: bool  # the guarded line runs when `test` is true (False: when it is false)
    line: int  # the line the condition is on
    names: tuple[str, ...]  # plain names the condition reads as values ("image_rotary_emb"; not `attn` of attn.x)
    attributes: tuple[str, ...]  # attributes it reads ("is_cross_attention" of attn.is_cross_attention)
    node: ast.AST = field(repr=False, compare=False)


def parents(root: ast.AST) -> dict[int, ast.AST]:
    """id(node) -> its parent, for every node under `root`."""
    found: dict[int, ast.AST] = {}
    for node in ast.walk(root):
        for child in ast.iter_child_nodes(node):
            found[id(child)] = node
    return found


def _guard(kind: GuardKind, test: ast.expr, holds: bool) -> Guard:
    text = ast.unparse(test)
    bases = {id(n.value) for n in ast.walk(test) if isinstance(n, ast.Attribute)}
    names = tuple(dict.fromkeys(n.id for n in ast.walk(test) if isinstance(n, ast.Name) and id(n) not in bases))
    attributes = tuple(dict.fromkeys(n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)))
    return Guard(kind, text if len(text) <= _MAX_TEST else text[:_MAX_TEST - 3] + "...", holds, test.lineno,
                 names, attributes, test)


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _early_exits(block: list[ast.stmt], before: ast.AST) -> list[Guard]:
    """`if test: return` statements that precede `before` in `block`, nearest first."""
    found = []
    for stmt in block:
        if stmt is before:
            break
        if isinstance(stmt, ast.If):
            if _exits(stmt.body) and not _exits(stmt.orelse):
                found.append(_guard(GuardKind.EARLY_EXIT, stmt.test, False))
            elif _exits(stmt.orelse) and not _exits(stmt.body):
                found.append(_guard(GuardKind.EARLY_EXIT, stmt.test, True))
    return found[::-1]


def _enclosing(parent: ast.AST, child: ast.AST) -> list[Guard]:
    """The guards `parent` puts on `child`, one of its direct children."""
    if isinstance(parent, ast.If) and child is not parent.test:
        return [_guard(GuardKind.IF, parent.test, child in parent.body)]
    if isinstance(parent, ast.IfExp) and child is not parent.test:
        return [_guard(GuardKind.TERNARY, parent.test, child is parent.body)]
    if isinstance(parent, ast.BoolOp):
        index = next(i for i, v in enumerate(parent.values) if v is child)
        kind, holds = (GuardKind.AND, True) if isinstance(parent.op, ast.And) else (GuardKind.OR, False)
        return [_guard(kind, v, holds) for v in reversed(parent.values[:index])]
    if isinstance(parent, ast.While) and child in parent.body:
        return [_guard(GuardKind.WHILE, parent.test, True)]
    if isinstance(parent, (ast.For, ast.AsyncFor)) and child in parent.body:
        return [_guard(GuardKind.FOR, parent.iter, True)]
    if isinstance(parent, ast.ExceptHandler):
        return [_guard(GuardKind.EXCEPT, parent.type, True)] if parent.type is not None else []
    return []


def _blocks(parent: ast.AST) -> list[list[ast.stmt]]:
    return [getattr(parent, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(parent, f, None), list)]


def guards_of(node: ast.AST, function: ast.AST, parent_of: dict[int, ast.AST]) -> tuple[Guard, ...]:
    """The conditions `node` runs under inside `function` (its own def), innermost first."""
    found: list[Guard] = []
    child = node
    while child is not function:
        parent = parent_of.get(id(child))
        if parent is None:
            break
        for block in _blocks(parent):
            if any(stmt is child for stmt in block):
                found.extend(_early_exits(block, child))
        found.extend(_enclosing(parent, child))
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and parent is not function:
            break  # a nested function's body: its own guards stop at its def
        child = parent
    return tuple(found)
