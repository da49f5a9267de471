"""A chain's nodes written as source: each op as a search-function line, a chain-table entry, its signature form."""

from __future__ import annotations

import itertools
import keyword
import math
import re
from typing import Any

from sdcompile.core.graph.nodes import innermost_source
from sdcompile.core.graph.pattern_chain import ChainError, ChainOp, op_target_name, torch_ops_expr
from sdcompile.core.graph.pattern_recipes import ConstantRule, Recipe

# (python expression, chain-table expression, signature form) of one argument
Rendered = tuple[str, str, Any]

_BUILTIN_NAMES = {"pow", "abs", "sum", "min", "max", "round", "slice", "type", "input", "id", "all", "any"}


class _Names:
    def __init__(self, reserved: set[str]):
        self.used = set(reserved)

    def take(self, base: str) -> str:
        base = re.sub(r"\W+", "_", base).strip("_") or "v"
        if base[0].isdigit():
            base = f"v_{base}"
        if base in _BUILTIN_NAMES or keyword.iskeyword(base):
            base = f"{base}_"
        for i in itertools.count():
            name = base if i == 0 else f"{base.rstrip('_')}_{i}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise AssertionError("unreachable")


class ChainWriter:
    """Writes the chain's nodes in order; a node's variable is known to the nodes written after it.

    `device_owner`, `device`: the chain's first tensor input and the device it holds; a device literal in the
    graph is written as that input's device (`x.device`)."""

    def __init__(self, recipe: Recipe, members: list, binding: dict[str, Any],
                 constants_at: dict[tuple[str, Any], ConstantRule], dtype_name: str,
                 device_owner: Any, device: str | None):
        self.recipe = recipe
        self.members = members
        self.role_of = {node: role for role, node in binding.items()}
        self.constants_at = constants_at
        self.dtype_name = dtype_name
        self.device_owner, self.device = device_owner, device
        reserved = ({r.name for r in recipe.roles} | {"torch", "dtype", "func"} | set(recipe.setup_names)
                    | {f"_{c.name}" for c in recipe.constants})
        self.present = [r.name for r in recipe.roles if r.name in binding]  # the chain's inputs, in call order
        self.names = _Names(reserved)
        self.var_of: dict[Any, str] = {}

    # -- one node
    def write(self, node) -> tuple[ChainOp, tuple]:
        """The node's ChainOp and its signature form (op, args' forms, kwargs' forms)."""
        target = op_target_name(node.target)
        base = "getitem" if target == "getitem" else target.split(".")[1]
        var = self.names.take(base)
        args = [self.render(a, (node.name, i)) for i, a in enumerate(node.args)]
        kwargs = [(k, self.render(v, (node.name, k))) for k, v in node.kwargs.items()]
        if target == "getitem":
            code = f"{args[0][0]}[{args[1][0]}]"
        else:
            parts = [a[0] for a in args] + [f"{k}={v[0]}" for k, v in kwargs]
            code = f"{torch_ops_expr(target)}({', '.join(parts)})"
        table_items = [a[1] for a in args]
        table_tuple = f"({table_items[0]},)" if len(table_items) == 1 else f"({', '.join(table_items)})"
        table_args = table_tuple + ", {" + ", ".join(f"{k!r}: {v[1]}" for k, v in kwargs) + "}"
        self.var_of[node] = var
        signature = (target, tuple(a[2] for a in args), tuple((k, v[2]) for k, v in kwargs))
        return ChainOp(var, node.name, target, code, table_args, innermost_source(node)), signature

    # -- one argument
    def render(self, arg, where: tuple[str, Any] | None = None) -> Rendered:
        import torch

        if isinstance(arg, torch.fx.Node):
            return self._node(arg)
        if where is not None and where in self.constants_at:
            rule = self.constants_at[where]
            return f"_{rule.name}", f"_{rule.name}", ("const", rule.name)
        if isinstance(arg, (list, tuple)):
            return self._sequence(arg)
        return self._literal(arg)

    def _node(self, arg) -> Rendered:
        if arg in self.var_of:
            index = self.members.index(arg)
            return self.var_of[arg], f"_Node({index})", ("node", index)
        role = self.role_of[arg]
        position = self.present.index(role)
        return role, f"_In({position})", ("in", role)

    def _sequence(self, arg: list | tuple) -> Rendered:
        parts = [self.render(a) for a in arg]
        py = ", ".join(p[0] for p in parts)
        table = ", ".join(p[1] for p in parts)
        if isinstance(arg, tuple):
            py, table = (f"({py},)", f"({table},)") if len(parts) == 1 else (f"({py})", f"({table})")
        else:
            py, table = f"[{py}]", f"[{table}]"
        return py, table, (type(arg).__name__, tuple(p[2] for p in parts))

    def _literal(self, arg) -> Rendered:
        import torch

        if isinstance(arg, bool) or arg is None or isinstance(arg, (int, str)):
            return repr(arg), repr(arg), ("lit", repr(arg))
        if isinstance(arg, float):
            text = repr(arg) if math.isfinite(arg) else f'float("{arg}")'
            return text, text, ("lit", text)
        if isinstance(arg, torch.dtype):
            if str(arg) == self.dtype_name:
                return "dtype", "dtype", ("dtype", "model")
            return str(arg), str(arg), ("lit", str(arg))
        if isinstance(arg, (torch.layout, torch.memory_format)):
            return str(arg), str(arg), ("lit", str(arg))
        if isinstance(arg, torch.device):
            if self.device_owner is None or self.device != str(arg):
                raise ChainError(f"device {arg} in the graph is not the device of the chain's inputs")
            return f"{self.role_of[self.device_owner]}.device", "_ANY", ("device",)
        raise ChainError(f"cannot write the literal {arg!r} ({type(arg).__name__}) into a pattern")
