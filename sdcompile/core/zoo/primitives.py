"""What counts as RMSNorm, RoPE, AdaLN and GELU: each op's [primitive] (catalogs/ops/<op>.toml), typed.

Rules name candidates only; `sdcompile.core.zoo.locate` applies them to a recorded forward, so the run decides
which implementations are present and where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from sdcompile.catalogs import load
from sdcompile.core.ops import op_tables

_REFLECTABLE = {"add", "sub", "mul", "truediv", "floordiv", "div", "pow", "matmul", "mod", "and", "or", "xor"}


def normalize_op(name: str) -> str:
    """`__radd__` / `add_` / `add` -> "add"; `view_as_complex` -> "viewascomplex" (one spelling per op)."""
    dunder = name.startswith("__") and name.endswith("__") and len(name) > 4
    core = name.strip("_")
    if dunder and core[:1] in ("r", "i") and core[1:] in _REFLECTABLE:
        core = core[1:]
    return core.replace("_", "").lower()


@dataclass(frozen=True)
class Signature:
    all: frozenset[str]
    none: frozenset[str]
    max_ops: int | None

    def matches(self, ops: frozenset[str]) -> bool:
        if self.max_ops is not None and len(ops) > self.max_ops:
            return False
        return self.all <= ops and not (self.none & ops)

    def describe(self) -> str:
        text = "+".join(sorted(self.all))
        return text + (f" without {'/'.join(sorted(self.none))}" if self.none else "")


@dataclass(frozen=True)
class Form:
    name: str
    ops_all: frozenset[str]
    ops_any: frozenset[str]
    args: tuple[tuple[str, Any], ...]

    def matches(self, ops: frozenset[str], call_args: dict[str, set]) -> bool:
        if self.ops_all and not self.ops_all <= ops:
            return False
        if self.ops_any and not (self.ops_any & ops):
            return False
        for key, value in self.args:
            if value not in call_args.get(key, ()):
                return False
        return bool(self.ops_all or self.ops_any or self.args)


@dataclass(frozen=True)
class PrimitiveRules:
    op: str
    title: str
    fused_ops: tuple[str, ...]
    classes: tuple[str, ...]
    exclude_classes: tuple[str, ...]
    functions: tuple[str, ...]
    torch_functions: frozenset[str]
    signatures: tuple[Signature, ...]
    parameters: tuple[str, ...]
    modulation: bool
    rotation: bool  # located by data flow too: x * cos + rot(x) * sin wherever it is written (rotation.py)
    forms: tuple[Form, ...]
    producer_form: str | None

    def class_matches(self, class_name: str) -> str | None:
        """The matching glob for a module class name, or None (exclusions win)."""
        if any(fnmatchcase(class_name, g) for g in self.exclude_classes):
            return None
        return next((g for g in self.classes if fnmatchcase(class_name, g)), None)

    def is_excluded(self, class_name: str) -> bool:
        return any(fnmatchcase(class_name, g) for g in self.exclude_classes)

    def function_matches(self, function_name: str) -> str | None:
        return next((g for g in self.functions if fnmatchcase(function_name, g)), None)

    def parameter_matches(self, attribute: str) -> str | None:
        return next((g for g in self.parameters if fnmatchcase(attribute, g)), None)

    def form_for(self, ops: frozenset[str], call_args: dict[str, set]) -> str | None:
        return next((f.name for f in self.forms if f.matches(ops, call_args)), None)


@dataclass(frozen=True)
class NpuBranches:
    call: re.Pattern
    gates: tuple[str, ...]
    gate_meaning: str


def _ops(values) -> frozenset[str]:
    return frozenset(normalize_op(v) for v in values or ())


@cache
def primitive_rules() -> dict[str, PrimitiveRules]:
    rules = {}
    for op, entry in op_tables().items():
        table = entry["primitive"]
        rules[op] = PrimitiveRules(
            op=op,
            title=entry["title"],
            fused_ops=tuple(table.get("fused_ops", ())),
            classes=tuple(table.get("classes", ())),
            exclude_classes=tuple(table.get("exclude_classes", ())),
            functions=tuple(table.get("functions", ())),
            torch_functions=_ops(table.get("torch_functions")),
            signatures=tuple(
                Signature(_ops(s.get("all")), _ops(s.get("none")), s.get("max_ops"))
                for s in table.get("signatures", ())
            ),
            parameters=tuple(table.get("parameters", ())),
            modulation=bool(table.get("modulation", False)),
            rotation=bool(table.get("rotation", False)),
            forms=tuple(
                Form(f["name"], _ops(f.get("ops_all")), _ops(f.get("ops_any")), tuple(f.get("args", {}).items()))
                for f in table.get("forms", ())
            ),
            producer_form=table.get("producer_form"),
        )
    return rules


@cache
def npu_branches() -> NpuBranches:
    table = load("npu_branches")["npu_branches"]
    return NpuBranches(re.compile(table["call"]), tuple(table["gates"]), table["gate_meaning"])
