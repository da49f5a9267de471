"""RoPE found by what the forward computes, wherever it is written: a tensor x rotated by tables.

Followed by identity through a recorded forward, like the modulations of provenance.py:

    rotate half / lanes   x * cos + rot(x) * sin, rot(x) a cat or stack of x's pieces with one negated
                          (`cat([-x2, x1])`, `stack([-x_imag, x_real], -1).flatten(3)`)
    pairwise              x1 * cos - x2 * sin (and x1 * sin + x2 * cos): two pieces of x, each times a table
    complex               view_as_complex(x) * freqs
    matrices              (F * x.reshape(..., D/2, 1, 2)).sum(-1): each lane pair times its 2 x 2 matrix

The tables are whatever multiplies x or its pieces and does not come from x: positions built from angles in the
forward, buffers built at init, or tensors passed in. A helper named like a RoPE function is found by name
(primitives.py); this finds the rotation computed inline in an attention processor or a block as well.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from types import CodeType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdcompile.core.zoo.provenance import Call
    from sdcompile.core.zoo.runtrace import FrameInfo

# ops that hand x on unchanged as far as the rotation is concerned (layout, dtype, views)
_PASSTHROUGH = {
    "view", "reshape", "to", "float", "half", "bfloat16", "typeas", "type", "contiguous", "unsqueeze", "squeeze",
    "flatten", "unflatten", "transpose", "permute", "expand", "expandas", "clone", "detach", "viewas",
}
_PIECES = {"chunk", "split", "unbind", "tensorsplit", "splitwithsizes"}
_ONE_PIECE = {"narrow", "select"}
_JOINS = {"cat", "stack", "concat", "concatenate"}


@dataclass(frozen=True)
class RotationEvent:
    frame: FrameInfo  # where the rotation was completed (the add of its two products)
    site: str
    lines: tuple[int, ...]  # the lines of that frame which compute it
    ops: frozenset[str]  # the ops that made the rotated operand ("cat", "neg"; "viewascomplex"), for its form


@dataclass(frozen=True)
class _Fact:
    kind: str  # "same" | "piece" | "rotated" | "complex" | "term" (a product, whose factors are kept) | "matrices"
    root: int  # the tensor x this is, a piece of, or rotates (a token, not an id: ids are reused)
    piece: int = 0  # which piece (its own token), for "piece"
    negated: bool = False
    ops: frozenset[str] = frozenset()
    where: frozenset[tuple[CodeType, int]] = frozenset()  # the calls that made it
    # "term": a product; what each of its factors is, by root
    factors: tuple[_Fact, ...] = field(default=())

    @property
    def identity(self) -> int:
        """This very value, up to layout and dtype: x's token, or a piece's own."""
        return self.piece if self.kind == "piece" else self.root


class Rotations:
    """Facts about the run's tensors (weakly keyed by identity), and the rotations found."""

    def __init__(self, tensor_type: type):
        from torch.utils.weak import WeakIdKeyDictionary

        self.tensor_type = tensor_type
        self.facts = WeakIdKeyDictionary()
        self.tokens = itertools.count(1)
        # what was reported, by the tensors it multiplied: the pairwise form completes twice per x (its sub and its
        # add), and which of x1 * cos - x2 * sin is x and which the table only the rest of the run would tell
        self.done: set[frozenset[int]] = set()
        self.events: list[RotationEvent] = []
        # pairwise: how often each pair of pieces was summed (see _rotates_pair)
        self.pairs_summed: dict[frozenset[int], int] = {}
        self.piece_tokens: dict[tuple[int, tuple], int] = {}

    def _fact(self, tensor) -> _Fact:
        fact = self.facts.get(tensor)
        if fact is None:
            fact = self.facts[tensor] = _Fact("same", next(self.tokens))
        return fact

    def _tag(self, result, fact: _Fact) -> None:
        if isinstance(result, self.tensor_type):
            self.facts[result] = fact

    def follow(self, call: Call) -> None:
        op, args = call.op, call.args
        here = frozenset({(call.info.code, call.line)})
        first = args[0] if args and isinstance(args[0], self.tensor_type) else None
        if op in ("mul", "add", "sub"):
            if len(call.flat) == 2:
                (self._product if op == "mul" else self._sum)(call, here)
        elif op in _JOINS:
            if args and isinstance(args[0], (list, tuple)):
                self._join(call, args[0], here)
        elif first is not None:
            self._unary(call, first, here)

    def _unary(self, call: Call, first, here) -> None:
        """A call on one tensor: a piece of it, it passed on, negated, viewed as complex, or a product summed."""
        op, args = call.op, call.args
        if op in _PIECES and isinstance(call.result, (tuple, list)):
            root = self._fact(first)
            for i, piece in enumerate(call.result):
                self._piece(piece, root, here, op, (op, i, repr(args[1:])))
        elif op == "getitem" and len(args) == 2 and _selects_part(args[1]):
            self._piece(call.result, self._fact(first), here, op, (op, repr(args[1])))
        elif op in _ONE_PIECE:
            self._piece(call.result, self._fact(first), here, op, (op, repr(args[1:])))
        elif op in _PASSTHROUGH or op == "getitem":
            self._pass(first, call.result, here)
        elif op == "neg":
            fact = self.facts.get(first)
            if fact is not None and fact.kind == "piece":
                self._tag(call.result, _Fact("piece", fact.root, fact.piece, not fact.negated, fact.ops | {"neg"},
                                             fact.where | here))
        elif op == "viewascomplex":
            fact = self._fact(first)
            if fact.kind not in ("rotated", "complex"):
                self._tag(call.result, _Fact("complex", fact.identity, ops=frozenset({"viewascomplex"}),
                                             where=fact.where | here))
        elif op == "sum":
            fact = self.facts.get(first)
            if fact is not None and fact.kind == "matrices":  # (F * x_pairs).sum(-1): each pair times its matrix
                self._found(call, frozenset(f.identity for f in fact.factors), fact.ops | {"sum"}, fact.where | here)

    def _piece(self, piece, of: _Fact, here, op: str, selection: tuple) -> None:
        """`selection`: which piece; selected again (`q[..., 0::2]` written twice), it is the same piece."""
        if of.kind != "rotated" and of.kind != "complex":  # a piece of a piece is split from that piece
            token = self.piece_tokens.setdefault((of.identity, selection), next(self.tokens))
            self._tag(piece, _Fact("piece", of.identity, token, ops=of.ops | {op}, where=of.where | here))

    def _pass(self, source, result, here) -> None:
        fact = self._fact(source)
        if result is not source:
            self._tag(result, _Fact(fact.kind, fact.root, fact.piece, fact.negated, fact.ops, fact.where | here,
                                    fact.factors))

    def _join(self, call: Call, parts, here) -> None:
        facts = [self.facts.get(t) for t in parts if isinstance(t, self.tensor_type)]
        if len(facts) < 2 or any(f is None or f.kind != "piece" for f in facts):
            return
        roots = {f.root for f in facts}
        if len(roots) == 1 and any(f.negated for f in facts) and len({f.piece for f in facts}) == len(facts):
            ops = frozenset().union(*(f.ops for f in facts)) | {call.op}
            where = frozenset().union(*(f.where for f in facts)) | here
            self._tag(call.result, _Fact("rotated", roots.pop(), ops=ops, where=where))

    def _product(self, call: Call, here) -> None:
        a, b = (self._fact(t) for t in call.flat)
        if a.identity == b.identity or (a.kind == b.kind == "piece" and a.root == b.root):
            return  # x * x, or two pieces of one x multiplied: no table
        complex_ = next((f for f in (a, b) if f.kind == "complex"), None)
        if complex_ is not None:
            self._found(call, frozenset({a.identity, b.identity}), complex_.ops, complex_.where | here)
            return
        # x's lane pairs [..., 1, 2] times 2 x 2 matrices [..., 2, 2]: rotation matrices, once summed over the pair
        ends = {tuple(t.shape[-2:]) for t in call.flat}
        kind = "matrices" if ends == {(1, 2), (2, 2)} else "term"
        # a product is a value of its own as well (a norm's `x * rsqrt(...) * weight`, then rotated)
        self._tag(call.result, _Fact(kind, next(self.tokens), ops=frozenset({"mul"}) if kind == "matrices" else
                                     frozenset(), where=a.where | b.where | here, factors=(a, b)))

    def _sum(self, call: Call, here) -> None:
        first, second = (self.facts.get(t) for t in call.flat)
        if first is None or second is None or first.kind != "term" or second.kind != "term":
            return
        for left, right in ((first, second), (second, first)):
            for x in left.factors:
                for other in right.factors:
                    rotates = other.kind == "rotated" and x.kind != "rotated" and other.root == x.identity
                    pairwise = x.kind == other.kind == "piece" and x.root == other.root and x.piece != other.piece
                    if pairwise and not self._rotates_pair(x, other, left, right):
                        return
                    if rotates or pairwise:
                        multiplied = frozenset(f.identity for f in first.factors + second.factors)
                        self._found(call, multiplied, x.ops | other.ops, first.where | second.where | here)
                        return

    def _rotates_pair(self, x: _Fact, other: _Fact, left: _Fact, right: _Fact) -> bool:
        """x1 * cos - x2 * sin alone could be any weighted sum of two pieces. A rotation computes the other half from
        the same pieces as well (x1 * sin + x2 * cos: the pair summed twice), or takes both tables from one rotation
        table (HiDream's F[..., 0] * x[..., 0] + F[..., 1] * x[..., 1], both rows at once)."""
        pair = frozenset({x.piece, other.piece})
        self.pairs_summed[pair] = self.pairs_summed.get(pair, 0) + 1
        tables = [f for term, piece in ((left, x), (right, other)) for f in term.factors if f is not piece]
        one_table = len(tables) == 2 and tables[0].kind == tables[1].kind == "piece" \
            and tables[0].root == tables[1].root
        return self.pairs_summed[pair] >= 2 or one_table

    def _found(self, call: Call, multiplied: frozenset[int], ops: frozenset[str], where) -> None:
        if multiplied in self.done:
            return
        self.done.add(multiplied)
        code = call.info.code
        lines = tuple(sorted({line for c, line in where if c is code}))
        self.events.append(RotationEvent(call.info, call.site, lines, ops))


def _selects_part(key) -> bool:
    """`x[..., :half]`, `x[..., 1::2]`, `x[:, :, 0]`: part of x, not all of it (`x[None]`, `x[:, None]`)."""
    parts = key if isinstance(key, tuple) else (key,)
    for p in parts:
        if isinstance(p, slice) and p != slice(None):
            return True
        if isinstance(p, int) and not isinstance(p, bool):
            return True
    return False
