"""What a forward's own source says about its arguments: the shape its docstring documents and how its code uses
each one. Input synthesis (synthesis.py) reads it for an argument no [[role]] of catalogs/any_model.toml names.

    documented_shapes(cls.forward)  # {"segment_ids": ("batch_size", "sequence_length"), ...}
    uses(cls.forward, module)       # {"segment_ids": "ids", "position_ids": "positions", "img_mask": "mask"}

Uses, read from the forward's syntax tree through the argument's own method calls (`x.unsqueeze(2)`, `x.to(...)`):
    ids        compared (`segment_ids.unsqueeze(2) == segment_ids.unsqueeze(1)`), made integer (`.long()`), or an
               embedding's index (`self.embed(x)` for an nn.Embedding, `F.embedding(x, ...)`)
    mask       made boolean, inverted, combined with & or |, the condition of torch.where, the mask of masked_fill,
               or passed as a keyword named like a mask
    positions  passed to a rotary or positional embedding module (its class or attribute name says RoPE/rotary/pos)
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Any

# diffusers documents each argument as `name (`torch.Tensor` of shape `(batch_size, sequence_length)`):`
# (a dimension may be an expression with a call of its own: `(batch_size, 1 + len(injection_layer_ids), text_len)`)
_DOCUMENTED = re.compile(r"^\s*(\w+) \(`[\w.]*Tensor`[^\n]*? of shape `\(((?:[^()`]|\([^()`]*\))*)\)`", re.M)
# method calls that hand the argument on as the same kind of value
_THROUGH = {"unsqueeze", "squeeze", "view", "reshape", "to", "expand", "flatten", "permute", "transpose", "clone",
            "contiguous", "repeat", "repeat_interleave", "__getitem__"}
_POSITIONAL = re.compile(r"rope|rotary|pos", re.I)


def documented_shapes(forward) -> dict[str, tuple[str, ...]]:
    """Each argument's shape as its docstring writes it: dimension words (`batch_size`) or numbers (`3`)."""
    doc = inspect.getdoc(forward) or ""
    found: dict[str, tuple[str, ...]] = {}
    for name, dims in _DOCUMENTED.findall(doc):
        words = tuple(d.strip() for d in re.split(r",(?![^()]*\))", dims) if d.strip())
        if words:
            found.setdefault(name, words)
    return found


def uses(forward, module: Any = None) -> dict[str, str]:
    """How the forward uses each argument it uses in one of the ways above (the first one found)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(forward))))
    except (OSError, TypeError, SyntaxError):
        return {}
    function = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if function is None:
        return {}
    arguments = {a.arg for a in (*function.args.args, *function.args.kwonlyargs)} - {"self"}
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    found: dict[str, str] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in arguments and node.id not in found:
            use = _use(node, parents, module)
            if use is not None:
                found[node.id] = use
    return found


def _use(node: ast.AST, parents: dict, module: Any) -> str | None:
    # climb through the argument's own method calls: `x.unsqueeze(2)` is still x for what follows
    while True:
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and isinstance(parents.get(parent), ast.Call) \
                and parents[parent].func is parent:
            method = parent.attr
            if method in ("long", "int") or (method == "to" and _names_dtype(parents[parent], "long", "int")):
                return "ids"
            if method in ("bool", "logical_not") or (method == "to" and _names_dtype(parents[parent], "bool")):
                return "mask"
            if method in ("eq", "ne"):
                return "ids"
            if method not in _THROUGH:
                return None
            node = parents[parent]
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            node = parent
        else:
            break
    parent = parents.get(node)
    if isinstance(parent, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in parent.ops):
        return "ids"
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Invert):
        return "mask"
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.BitAnd, ast.BitOr)):
        return "mask"
    if isinstance(parent, ast.keyword) and parent.arg and "mask" in parent.arg:
        return "mask"
    if isinstance(parent, ast.Call):
        return _passed_to(parent, node, module)
    return None


def _passed_to(call: ast.Call, node: ast.AST, module: Any) -> str | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = bool(call.args) and call.args[0] is node
    if name == "where" and first:
        return "mask"
    if name == "masked_fill" and len(call.args) > 0 and call.args[0] is node:
        return "mask"
    if name == "embedding" and first:
        return "ids"
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        import torch

        child = getattr(module, func.attr, None) if module is not None else None
        if isinstance(child, torch.nn.Embedding) and first:
            return "ids"
        named = _POSITIONAL.search(func.attr) or (child is not None and _POSITIONAL.search(type(child).__name__))
        if first and named:
            return "positions"
    return None


def _names_dtype(call: ast.Call, *dtypes: str) -> bool:
    """`x.to(torch.long)` / `x.to(dtype=torch.bool)`: whether the call names one of `dtypes`."""
    values = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    return any(isinstance(v, ast.Attribute) and v.attr in dtypes for v in values)
