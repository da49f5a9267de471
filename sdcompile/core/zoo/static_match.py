"""Primitive calls in source: where the code a forward can reach (`static_sites.reach`) calls RMSNorm, RoPE, AdaLN
or GELU, by the same catalog rules `locate` applies to a run (each op's [primitive]), read as data:

    functions        a call whose callee's name matches (`apply_rotary_emb_allegro(query, ...)`)
    torch_functions  a call of that torch function (`F.gelu(x)`, `torch_npu.npu_rms_norm(...)`), not a method of self
    classes          a call of a module attribute whose class matches (`attn.norm_q(query)`): the class of the
                     model's own module at that attribute, else (the attribute is None or missing, e.g. a config
                     flag left it out) the classes the owner's `__init__` assigns to it
    signatures       a call of a function whose own calls and operators hold the signature's ops (`rotate(x, ...)`)
    modulation       `x * (1 + scale)` (AdaLN)
    parameters       a read of an attribute of that name (`self.scale_shift_table`)
"""

from __future__ import annotations

import ast
import builtins
import inspect
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.zoo.primitives import PrimitiveRules, normalize_op
from sdcompile.core.zoo.static_sites import Reach, Unit, callee_name, unit_of

_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
              ast.Pow: "pow", ast.MatMult: "matmul", ast.Mod: "mod", ast.USub: "neg"}


@dataclass(frozen=True)
class StaticSite:
    op: str
    unit: Unit = field(repr=False, compare=False)
    line: int
    end_line: int
    callee: str  # "apply_rotary_emb_allegro", "norm_q", "gelu", "" for an expression
    matched_by: str  # "function apply_rotary_emb*", "class *RMSNorm", "calls gelu", "ops ...", "modulation ..."
    node: ast.AST = field(repr=False, compare=False)
    matched_class: str = ""  # a module attribute's call: the class it holds ("RMSNorm")
    target: Unit | None = field(default=None, repr=False, compare=False)  # matched by the ops of this function


def static_ops(node: ast.AST) -> frozenset[str]:
    """The op names a function's own code spells (calls not on self, operators, subscript writes), as `locate`
    normalises the names a run records; builtins (len, isinstance) are no torch op."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name) and not hasattr(builtins, f.id):
                found.add(normalize_op(f.id))
            elif isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name) and f.value.id == "self"):
                found.add(normalize_op(f.attr))
        elif isinstance(n, (ast.BinOp, ast.AugAssign)):
            name = _OPERATORS.get(type(n.op))
            if name:
                found.add(name)
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and not isinstance(n.operand, ast.Constant):
            found.add("neg")
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            found.add("setitem")
    return frozenset(found)


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value == 1


def is_modulation(node: ast.AST) -> bool:
    """`x * (1 + scale)` (either order): the shape AdaLN's modulation is written in."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return False
    return any(isinstance(side, ast.BinOp) and isinstance(side.op, ast.Add) and (_is_one(side.left) or
               _is_one(side.right)) for side in (node.left, node.right))


def _resolve_expr(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    """`RMSNorm` / `nn.RMSNorm` / `torch.nn.RMSNorm` in a module's globals; None when not found."""
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = _resolve_expr(expr.value, namespace)
        return getattr(base, expr.attr, None) if base is not None else None
    return None


def _constructors(value: ast.expr, namespace: dict[str, Any]) -> list[Any]:
    """The classes (or, unresolved, their names) an `__init__` assignment's value constructs; both sides of a
    ternary (`RMSNorm(d) if qk_norm else None`)."""
    if isinstance(value, ast.IfExp):
        return _constructors(value.body, namespace) + _constructors(value.orelse, namespace)
    if isinstance(value, ast.Call):
        cls = _resolve_expr(value.func, namespace)
        return [cls if inspect.isclass(cls) else callee_name(value)]
    return []


class Matcher:
    """Finds one model's primitive calls in the code `reach` found."""

    def __init__(self, found: Reach, rules: dict[str, PrimitiveRules]):
        self.reach, self.rules = found, rules
        self._inits: dict[type, dict[str, list[Any]]] = {}
        self._ops: dict[tuple[str, int], frozenset[str]] = {}
        self._held: dict[tuple[str, type | None], list[Any]] = {}

    def sites(self, ops: tuple[str, ...]) -> list[StaticSite]:
        found: list[StaticSite] = []
        for unit in self.reach.units.values():
            for node in ast.walk(unit.node):
                found.extend(self._match(node, unit, ops))
        return found

    def _match(self, node: ast.AST, unit: Unit, ops: tuple[str, ...]) -> list[StaticSite]:
        found = []
        for op in ops:
            rules = self.rules[op]
            reason, cls, target = self._call_reason(node, unit, rules) if isinstance(node, ast.Call) \
                else (None, "", None)
            if reason is None and rules.modulation and is_modulation(node):
                reason = "modulation x * (1 + scale)"
            if reason is None and isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                glob = rules.parameter_matches(node.attr)
                reason = f"reads {glob}" if glob else None
            if reason is not None:
                callee = callee_name(node) if isinstance(node, ast.Call) else ""
                found.append(StaticSite(op, unit, node.lineno, node.end_lineno or node.lineno, callee, reason, node,
                                        cls, target))
        return found

    def _call_reason(self, call: ast.Call, unit: Unit, rules: PrimitiveRules) -> tuple[str | None, str, Unit | None]:
        """(why the call is the primitive, the class of the module it calls, the function whose ops matched)."""
        name = callee_name(call)
        if not name:
            return None, "", None
        glob = rules.function_matches(name)
        if glob is not None:
            return f"function {glob}", "", None
        on_self = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
            and call.func.value.id == "self"
        if not on_self and normalize_op(name) in rules.torch_functions:
            return f"calls {name}", "", None
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            found = self._attribute_reason(call.func, unit, rules)
            if found is not None:
                return found
        for callee in self.reach.callees.get((unit.key, id(call)), ()):
            sig = next((s for s in rules.signatures if s.matches(self.ops_of(callee))), None)
            if sig is not None:
                return f"ops {sig.describe()}", "", callee
        return None, "", None

    def ops_of(self, unit: Unit) -> frozenset[str]:
        if unit.key not in self._ops:
            self._ops[unit.key] = static_ops(unit.node)
        return self._ops[unit.key]

    # ------------------------------------------------------------------------------ module attributes
    def _attribute_reason(self, func: ast.Attribute, unit: Unit, rules: PrimitiveRules) \
            -> tuple[str, str, Unit | None] | None:
        on_self = func.value.id == "self"  # type: ignore[attr-defined]
        for cls in self.attribute_classes(func.attr, unit.owner if on_self else None):
            name = cls.__name__ if inspect.isclass(cls) else str(cls)
            glob = rules.class_matches(name)
            if glob is not None:
                return f"class {glob}", name, None
            forward = self._forward(cls) if inspect.isclass(cls) and not rules.is_excluded(name) else None
            ops = self.ops_of(forward) if forward is not None else frozenset()
            sig = next((s for s in rules.signatures if ops and s.matches(ops)), None)
            if sig is not None:
                return f"ops {sig.describe()}", name, forward
        return None

    @staticmethod
    def _forward(cls: type) -> Unit | None:
        fn = next((vars(k)["forward"] for k in inspect.getmro(cls) if "forward" in vars(k)), None)
        return unit_of(fn)

    def attribute_classes(self, attr: str, owner: type | None) -> list[Any]:
        """The classes held at `attr`: on `owner`'s instances (self), else on any module of the model that has a
        child of that name; when none holds a module there, the classes the `__init__`s assign to it."""
        key = (attr, owner)
        if key not in self._held:
            self._held[key] = self._attribute_classes(attr, owner)
        return self._held[key]

    def _attribute_classes(self, attr: str, owner: type | None) -> list[Any]:
        import torch

        classes = owner and [owner] or list(self.reach.live)
        held = []
        for cls in classes:
            for instance in self.reach.live.get(cls, ()):
                child = getattr(instance, "_modules", {}).get(attr)
                if isinstance(child, torch.nn.Module) and type(child) not in held:
                    held.append(type(child))
        if held:
            return held
        assigned: list[Any] = []
        for cls in classes:
            for ctor in self._assigned(cls).get(attr, ()):
                if ctor not in assigned:
                    assigned.append(ctor)
        return assigned

    def _assigned(self, cls: type) -> dict[str, list[Any]]:
        """attribute -> constructed classes, from the `__init__`s of `cls` and its bases."""
        if cls in self._inits:
            return self._inits[cls]
        found: dict[str, list[Any]] = {}
        import torch

        for klass in inspect.getmro(cls):
            if klass is torch.nn.Module or klass is object:
                continue
            init = vars(klass).get("__init__")
            unit = unit_of(init)
            if unit is None:
                continue
            for node in ast.walk(unit.node):
                if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        found.setdefault(target.attr, []).extend(_constructors(node.value, unit.namespace))
        self._inits[cls] = found
        return found


def static_sites(found: Reach, rules: dict[str, PrimitiveRules], ops: tuple[str, ...]) -> list[StaticSite]:
    """Every primitive call of `ops` in the reached code, one per (op, node)."""
    return Matcher(found, rules).sites(ops)
