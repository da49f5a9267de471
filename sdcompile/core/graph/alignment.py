"""What an alignment records: each node pair, each difference with the field it is in, and their totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The differing field of a pair, as reports name it.
TARGET, ARGUMENT, CONSTANT, DTYPE, SHAPE, USERS, NODE_KIND = (
    "target", "argument", "constant", "dtype", "shape", "users", "node kind")


@dataclass
class Pair:
    pattern: Any  # fx.Node of the pattern graph (None for a node present in the model only)
    model: Any  # fx.Node of the model graph, or a literal (None for a node present in the pattern only)
    status: str  # "match" | "input" | "differs" | "extra in model" | "missing in model"
    field: str | None = None
    detail: str = ""


@dataclass
class Difference:
    field: str  # TARGET, ARGUMENT, CONSTANT, DTYPE, SHAPE, USERS, NODE_KIND
    kind: str  # finer cause, e.g. "op", "extra in model", "literal", "external users", "model constant"
    pattern: Any  # pattern node at the difference (None when the model has an extra node)
    model: Any  # model node or literal at the difference
    detail: str
    stage: str  # "structure" | "exact"
    pattern_value: Any = None  # the two literals, for constant differences
    model_value: Any = None
    pattern_user: Any = None  # the pattern node consuming `pattern` (the walk's parent)
    model_user: Any = None  # the model node consuming `model`
    position: str = ""  # "argument 1 of aten.mul.Tensor", for constants


@dataclass
class Alignment:
    start: Any  # the model node the walk started from
    stage: str
    pairs: list[Pair] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    bindings: dict[str, Any] = field(default_factory=dict)  # pattern input name -> model node or value
    matched: int = 0  # pattern op nodes matched
    total: int = 0  # pattern op nodes

    @property
    def first(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    @property
    def clean(self) -> bool:
        return not self.differences
