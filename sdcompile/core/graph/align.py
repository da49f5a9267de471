"""Align a registered pattern with a model graph, walking back from the pattern's output as torch's matcher does.

torch._inductor's matcher starts at a graph node whose op is the pattern's output op and matches depth-first,
arguments left to right (`_TargetArgsExpr._match`): the op and overload, the number of positional arguments
and the keyword structure, the users (every pattern node but the output must have exactly as many users in
the graph as in the pattern), then each argument — a pattern input binds to anything (the same input must
bind the same node every time), a literal must be equal. It matches twice:

  structure  against the pattern traced from the registration's example inputs, with int, float, list,
             dtype and device literals ignored (bool and str literals still count)
  exact      `register_replacement`'s check traces the search function again with the matched inputs' real
             shapes and dtypes and compares every literal: eps, dims, view sizes, cast dtypes

`align()` walks the same way but does not stop at a disagreement: it records every node pair, steps over a
dtype cast or view that is present on one side only (so the rest of the pattern still lines up), and keeps
every difference in walk order; the first is the one the matcher trips on. What it records: alignment.py; how
arguments compare: align_arguments.py.
"""

from __future__ import annotations

import operator
from typing import Any

from sdcompile.catalogs import load
from sdcompile.core.graph.align_arguments import ignorable, literal_equal, normalized_call
from sdcompile.core.graph.alignment import (
    ARGUMENT,
    CONSTANT,
    DTYPE,
    NODE_KIND,
    SHAPE,
    TARGET,
    USERS,
    Alignment,
    Difference,
    Pair,
)
from sdcompile.core.graph.nodes import op_name


# ------------------------------------------------------------------------------------------------ op families
def op_families() -> dict[str, frozenset[str]]:
    """Ops a report treats as dtype casts or views, from catalogs/mismatches.toml (`[families]`)."""

    families = load("mismatches").get("families", {})
    return {name: frozenset(ops) for name, ops in families.items()}


def family_of(node) -> str | None:
    if not is_op(node):
        return None
    name = op_name(node)
    for family, ops in op_families().items():
        if name in ops:
            return family
    return None


def is_op(value) -> bool:
    import torch.fx

    return isinstance(value, torch.fx.Node) and value.op in ("call_function", "call_method", "call_module")


def is_node(value) -> bool:
    import torch.fx

    return isinstance(value, torch.fx.Node)


class _Walker:
    def __init__(self, pattern_output, exact: bool, max_skips: int = 4, equivalent=None):
        self.exact = exact
        self.equivalent = equivalent  # (pattern node, model node) -> bool: the same op in another (decomposed) form
        self.stage = "exact" if exact else "structure"
        self.output = pattern_output
        self.visited: dict[Any, Any] = {}  # pattern node -> model value
        self.pairs: list[Pair] = []
        self.differences: list[Difference] = []
        self.max_skips = max_skips

    # -- helpers
    def _differ(self, field_name, kind, p, m, detail, **extra) -> None:
        self.differences.append(Difference(field_name, kind, p, m, detail, self.stage, **extra))
        self.pairs.append(Pair(p, m, "differs", field_name, detail))

    def _trial(self, p, m, p_user, m_user, skips: int) -> _Walker:
        trial = _Walker(self.output, self.exact, self.max_skips, self.equivalent)
        trial.visited = dict(self.visited)
        trial.walk(p, m, p_user, m_user, skips)
        return trial

    def _adopt(self, trial: _Walker) -> None:
        self.visited = trial.visited
        self.pairs.extend(trial.pairs)
        self.differences.extend(trial.differences)

    @staticmethod
    def _hard(trial: _Walker) -> bool:
        return any(d.kind not in ("extra in model", "missing in model") for d in trial.differences)

    @staticmethod
    def _steps_over(trial: _Walker, p_next, m_next) -> bool:
        """Whether stepping over a one-sided cast or view is the better reading: below it everything lines up, or
        at least the very next pair does (the remaining differences are then reported further down)."""
        if not _Walker._hard(trial):
            return True
        if p_next.op == "placeholder":
            return False  # a pattern input binds anything: that alone proves nothing
        return is_op(m_next) and m_next.target == p_next.target

    def _whole_form(self, p, m):
        """The model node that computes `p`'s step whole where the pattern has it decomposed: `m` itself, or for
        `getitem(op, i)` of a multi-output op (native_layer_norm) that op; None when neither is."""
        if self.equivalent is None:
            return None
        if self.equivalent(p, m):
            return m
        if m.target is operator.getitem and len(m.args) > 1 and is_op(m.args[0]) and self.equivalent(p, m.args[0]):
            return m.args[0]
        return None

    # -- the walk
    def walk(self, p, m, p_user=None, m_user=None, skips: int = 0) -> None:
        if p in self.visited:
            self._revisit(p, m, p_user, m_user)
            return
        if p.op == "placeholder":
            self.visited[p] = m
            self.pairs.append(Pair(p, m, "input", None, f"pattern input {p.target} binds {_name(m)}"))
            return
        if not is_node(m):
            self._differ(NODE_KIND, "model literal", p, m,
                         f"the pattern computes {op_name(p)} where the model passes the literal {m!r}",
                         pattern_user=p_user, model_user=m_user)
            return
        if m.op in ("placeholder", "get_attr"):
            self._walk_model_leaf(p, m, p_user, m_user, skips)
        elif m.target != p.target:
            self._walk_other_target(p, m, p_user, m_user, skips)
        else:
            self._walk_same_target(p, m, p_user, m_user, skips)

    def _revisit(self, p, m, p_user, m_user) -> None:
        """A pattern node met again: the model must feed the same node again."""
        if self.visited[p] is not m:
            seen = self.visited[p]
            what = "input" if p.op == "placeholder" else "value"
            self._differ(ARGUMENT, "reuse", p, m,
                         f"the pattern uses one {what} ({p.name}) here and at {_name(seen)}; the model uses "
                         f"{_name(m)} here and {_name(seen)} there", pattern_user=p_user, model_user=m_user)

    def _walk_model_leaf(self, p, m, p_user, m_user, skips: int) -> None:
        """The pattern computes `p` where the model has a graph input or a constant."""

        # A cast or view of a frozen constant is never "missing": freeze() folded it into the constant.
        if m.op == "placeholder" and skips < self.max_skips and family_of(p) and p.args and is_node(p.args[0]):
            trial = self._trial(p.args[0], m, p, m_user, skips + 1)
            if not self._hard(trial):
                self._differ(TARGET, "missing in model", p, None,
                             f"the pattern has {op_name(p)} here; the model has no such "
                             f"{family_of(p)} before {_name(m_user)}", pattern_user=p_user, model_user=m_user)
                self._adopt(trial)
                return
        kind = "model constant" if m.op == "get_attr" else "model input"
        what = f"get_attr {m.target}" if m.op == "get_attr" else "a graph input"
        self._differ(NODE_KIND, kind, p, m, f"the pattern computes {op_name(p)} where the model has {what}",
                     pattern_user=p_user, model_user=m_user)

    def _walk_other_target(self, p, m, p_user, m_user, skips: int) -> None:
        """The targets differ: the first reading that explains it, in this order, else a target difference."""

        readings = (self._as_decomposition, self._as_cast_op, self._as_extra_in_model, self._as_missing_in_model)
        if any(reading(p, m, p_user, m_user, skips) for reading in readings):
            return
        self._differ(TARGET, _target_kind(p, m), p, m, f"the pattern has {op_name(p)}, the model has {op_name(m)}",
                     pattern_user=p_user, model_user=m_user)

    def _as_decomposition(self, p, m, p_user, m_user, skips: int) -> bool:
        """The model computes the step whole where the pattern registered it decomposed."""

        whole = self._whole_form(p, m)
        if whole is None:
            return False
        where = op_name(m) if whole is m else f"item {m.args[1]!r} of {op_name(whole)} ({m.name})"
        self._differ(TARGET, "decomposition", p, whole,
                     f"the pattern has {op_name(p)} where the model has {where}: the same step, "
                     "registered in its decomposed form", pattern_user=p_user, model_user=m_user)
        self.visited[p] = m
        for pa, ma in zip(p.all_input_nodes, whole.all_input_nodes, strict=False):
            self.walk(pa, ma, p, whole, skips)
        return True

    def _as_cast_op(self, p, m, p_user, m_user, skips: int) -> bool:
        """One cast spelled by another op (torch_npu < 2.9 traces Tensor.to as npu._npu_dtype_cast): the
        structure goes on below it, so the walk does too."""

        if not (family_of(p) == family_of(m) == "cast" and is_node(p.args[0]) and is_node(m.args[0])):
            return False
        self._differ(TARGET, "cast op", p, m, f"the pattern casts with {op_name(p)}, the model with "
                     f"{op_name(m)} ({m.name})", pattern_user=p_user, model_user=m_user)
        self.visited[p] = m
        self.walk(p.args[0], m.args[0], p, m, skips)
        return True

    def _as_extra_in_model(self, p, m, p_user, m_user, skips: int) -> bool:
        """A cast or view the model has and the pattern does not: step over it on the model side."""

        if not (skips < self.max_skips and family_of(m) and m.args and is_node(m.args[0])):
            return False
        trial = self._trial(p, m.args[0], p_user, m, skips + 1)
        if not self._steps_over(trial, p, m.args[0]):
            return False
        self._differ(TARGET, "extra in model", None, m,
                     f"the model has {op_name(m)} between {_name(m.args[0])} and {_name(m_user)}; the "
                     "pattern has none", pattern_user=p_user, model_user=m_user)
        self._adopt(trial)
        return True

    def _as_missing_in_model(self, p, m, p_user, m_user, skips: int) -> bool:
        """A cast or view the pattern has and the model does not: step over it on the pattern side."""

        if not (skips < self.max_skips and family_of(p) and p.args and is_node(p.args[0])):
            return False
        trial = self._trial(p.args[0], m, p, m_user, skips + 1)
        if not self._steps_over(trial, p.args[0], m):
            return False
        self._differ(TARGET, "missing in model", p, None,
                     f"the pattern has {op_name(p)} here; the model goes straight to {_name(m)}",
                     pattern_user=p_user, model_user=m_user)
        self._adopt(trial)
        return True

    def _walk_same_target(self, p, m, p_user, m_user, skips: int) -> None:
        """The same op: its call form, its users, then its arguments."""

        m_args, m_kwargs = normalized_call(m, p)
        if m_args is None:
            self._differ(ARGUMENT, "arguments", p, m,
                         f"{op_name(m)} takes {len(m.args)} positional arguments and {sorted(m.kwargs)} keywords in "
                         f"the model, {len(p.args)} and {sorted(p.kwargs)} in the pattern",
                         pattern_user=p_user, model_user=m_user)
            return
        if p is not self.output and len(m.users) != len(p.users):
            extra = [u for u in m.users if u is not m_user]
            kind = "external users" if len(m.users) > len(p.users) else "fewer users"
            users = ", ".join(_name(u) for u in m.users)
            self._differ(USERS, kind, p, m,
                         f"{_name(m)} has {len(m.users)} user(s) in the model ({users}); "
                         f"the pattern's {p.name} has {len(p.users)}",
                         pattern_user=p_user, model_user=m_user, model_value=tuple(extra))
            # the matcher stops here; the walk goes on to collect what else differs below this node
        else:
            self.pairs.append(Pair(p, m, "match", None, ""))
        self.visited[p] = m
        self._walk_args(p, m, list(p.args) + list(p.kwargs.values()),
                        list(m_args) + [m_kwargs[k] for k in p.kwargs], skips)

    def _walk_args(self, p, m, p_items, m_items, skips) -> None:
        for index, (pa, ma) in enumerate(zip(p_items, m_items, strict=True)):
            position = _position(p, index)
            if is_node(pa):
                self.walk(pa, ma, p, m, skips)
            elif isinstance(pa, (list, tuple)) and any(is_node(x) for x in pa):
                if not isinstance(ma, (list, tuple)) or len(ma) != len(pa):
                    self._differ(ARGUMENT, "list", p, m, f"{position}: a list of {len(pa)} in the pattern, "
                                 f"{_short(ma)} in the model", position=position)
                    continue
                for pi, mi in zip(pa, ma, strict=True):
                    if is_node(pi):
                        self.walk(pi, mi, p, m, skips)
                    elif is_node(mi):
                        self._differ(ARGUMENT, "literal vs node", p, m,
                                     f"{position}: the pattern has the literal {pi!r}, the model {_name(mi)}",
                                     position=position)
                    elif not self.exact and ignorable(pi, p.target):
                        continue
                    elif pi != mi:
                        self._literal(p, m, pi, mi, position)
            elif is_node(ma):
                self._differ(ARGUMENT, "literal vs node", p, m,
                             f"{position}: the pattern has the literal {pa!r}, the model passes {_name(ma)} "
                             f"({op_name(ma) if is_op(ma) else ma.op})", position=position)
            elif not self.exact and ignorable(pa, p.target):
                continue
            elif not literal_equal(pa, ma):
                self._literal(p, m, pa, ma, position)

    def _literal(self, p, m, pa, ma, position) -> None:
        import torch

        if isinstance(pa, torch.dtype) or isinstance(ma, torch.dtype):
            field_name = DTYPE
        elif family_of(m) == "view" and isinstance(pa, (list, tuple)):
            field_name = SHAPE
        else:
            field_name = CONSTANT
        self._differ(field_name, "literal", p, m,
                     f"{op_name(m)} {position}: {ma!r} in the model, {pa!r} in the pattern",
                     pattern_value=pa, model_value=ma, position=position)



def _target_kind(p, m) -> str:
    pt, mt = getattr(p.target, "overloadpacket", None), getattr(m.target, "overloadpacket", None)
    if pt is not None and pt is mt:
        return "overload"
    return "op"


def _position(p, index: int) -> str:
    if index < len(p.args):
        return f"argument {index} of {op_name(p)}"
    key = list(p.kwargs)[index - len(p.args)]
    return f"{key}= of {op_name(p)}"


def _name(value) -> str:
    if value is None:
        return "the pattern's output"
    return value.name if is_node(value) else repr(value)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


# ------------------------------------------------------------------------------------------------ entry points
def align(pattern_gm, start, exact: bool = False, argnames: tuple[str, ...] = (), equivalent=None) -> Alignment:
    """Walk `pattern_gm` (a traced search graph) against the model graph from `start` (the model node taken for
    the pattern's output). `argnames` name the pattern's inputs (the search function's parameters, in order);
    `equivalent(pattern_node, model_node)` tells when two different targets are one op in two forms."""
    out = next(n for n in reversed(pattern_gm.graph.nodes) if n.op == "output")
    output = out.args[0][0] if isinstance(out.args[0], (list, tuple)) else out.args[0]
    walker = _Walker(output, exact, equivalent=equivalent)
    walker.walk(output, start)
    ops = [n for n in pattern_gm.graph.nodes if n.op == "call_function"]
    matched = {p for p, m in walker.visited.items() if p.op == "call_function"}
    differing = {d.pattern for d in walker.differences if d.pattern is not None}
    placeholders = [n for n in pattern_gm.graph.nodes if n.op == "placeholder"]
    names = {p: (argnames[i] if i < len(argnames) else p.target) for i, p in enumerate(placeholders)}
    bindings = {names[p]: m for p, m in walker.visited.items() if p.op == "placeholder"}
    return Alignment(start=start, stage=walker.stage, pairs=walker.pairs, differences=walker.differences,
                     bindings=bindings, matched=len(matched - differing), total=len(ops))


def best_alignment(pattern_gm, starts, argnames: tuple[str, ...] = (), equivalent=None,
                   preferred=frozenset()) -> Alignment | None:
    """The alignment from the start node that lines up most pattern ops. Ties (often: nothing lines up at all)
    go to a node with the pattern's output op, then to the reading with fewer one-sided casts and views (a cast
    the model spells with another op, read as such), then to a node of the site itself (`preferred`) rather than
    one of its users, then to the fewest differences and the latest node, which is where an output usually is."""
    out = next(n for n in reversed(pattern_gm.graph.nodes) if n.op == "output")
    output = out.args[0][0] if isinstance(out.args[0], (list, tuple)) else out.args[0]
    best, best_key = None, None
    for index, start in enumerate(starts):
        alignment = align(pattern_gm, start, argnames=argnames, equivalent=equivalent)
        one_sided = sum(d.kind in ("missing in model", "extra in model") for d in alignment.differences)
        key = (alignment.clean, alignment.matched, start.target == getattr(output, "target", None), -one_sided,
               start in preferred, -len(alignment.differences), index)
        if best_key is None or key > best_key:
            best, best_key = alignment, key
    return best
