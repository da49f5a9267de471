"""Where a chain lies within a site's nodes: where it starts (the recipe's start op, or the multiply by 1 + scale),
what joins it from outside (the `1 + scale` a model computes a line earlier, the norm producing its input), where it
ends (a modulation's last add or multiply), and how a site holding several chains splits into them. Also the form of
an op a site's chain has (forms.SiteForms)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sdcompile.core.graph.nodes import target_name
from sdcompile.core.graph.pattern_chain import PASS_THROUGH, ChainError, is_literal, op_target_name
from sdcompile.core.graph.pattern_recipes import Recipe
from sdcompile.core.graph.role_binding import flows_into


def shared_start(members: list, member_set: set, recipe: Recipe) -> set:
    """The recipe's start op and the pass-through nodes carrying its result on, when values of them are read outside
    the subgraph too: another chain modulating the same normalised x (SD3.5's AdaLayerNormZeroX). Empty when
    nothing outside reads them, or when the recipe has no start."""
    if recipe.starts_at is None:
        return set()
    start = next((n for n in members if recipe.is_start(n)), None)
    if start is None:
        return set()
    carried, frontier = {start}, [start]
    while frontier:
        node = frontier.pop()
        for user in node.users:
            if user in member_set and user not in carried and target_name(user.target) in PASS_THROUGH:
                carried.add(user)
                frontier.append(user)

    def escapes(n) -> bool:
        return any(u not in member_set for u in n.users)

    # shared only beside an output of its own: a chain that ends at the start (a GELU) has nothing to share
    own_output = any(escapes(n) for n in members if n not in carried)
    return carried if own_output and any(escapes(n) for n in carried) else set()




def tables_outside(members: list, recipe: Recipe) -> list:
    """The site's nodes without the tables they compute apart from the chain's subject (the role that flows through
    the recipe's `through` op: x, whose halves are negated; else the input shaped like the output) to multiply it
    with: tables a site builds from an angle input (ERNIE-Image's
    `cos(freqs)`, `sin(freqs)` inside its RoPE function) stay in the graph, and the fused op takes them as inputs.
    The nodes as they are when the subject is not one input, or none of them is such a table."""
    member_set = set(members)
    inputs = outside_inputs(members, member_set)
    subject = next((r for r in recipe.roles if r.through), None)
    if subject is not None:
        subjects = [i for i in inputs if flows_into(i, subject.through, member_set)]
    else:  # the input the output is shaped like (x, rotated lane by lane), not a buffer written over (empty_like)
        out = [n for n in members if any(u not in member_set for u in n.users)]
        shape = _shape(out[-1]) if out else None
        subjects = [i for i in inputs if shape is not None and _shape(i) == shape
                    and not (i.op == "call_function" and target_name(i.target).startswith("aten.empty"))]
    if len(subjects) != 1:
        return members
    downstream, frontier = set(), [subjects[0]]
    while frontier:
        for user in frontier.pop().users:
            if user in member_set and user not in downstream:
                downstream.add(user)
                frontier.append(user)
    # the tables: what multiplies x's values, and what computed it apart from x (a buffer's slices stay)
    tables = {a for n in downstream if target_name(n.target) == "aten.mul.Tensor" for a in n.all_input_nodes
              if a in member_set and a not in downstream}
    builders, frontier = set(tables), list(tables)
    while frontier:
        for a in frontier.pop().all_input_nodes:
            if a in member_set and a not in downstream and a not in builders:
                builders.add(a)
                frontier.append(a)
    kept = member_set - builders
    while True:
        # one table value computed twice (Helios slices cos[..., 0::2] for each of its two products) stays in the
        # chain, read from what it was computed from: two inputs would let a match bind two different tables there
        boundary = [n for n in outside_inputs([n for n in members if n in kept], kept) if n in member_set]
        twins = {n for i, a in enumerate(boundary) for b in boundary[i + 1:] if _same_call(a, b) for n in (a, b)}
        if not twins:
            return [n for n in members if n in kept]
        kept |= twins


def _same_call(a, b) -> bool:
    return (a.op == b.op == "call_function" and a.target == b.target and a.args == b.args
            and a.kwargs == b.kwargs)


def _shape(node) -> tuple | None:
    val = node.meta.get("val")
    return tuple(val.shape) if val is not None and hasattr(val, "shape") else None


def from_start(members: list, recipe: Recipe) -> list:
    """The site's nodes from the recipe's first op on (a GELU module's projection is not part of the GELU). A site
    without that op whose input it produced (inline modulation after a separate LayerNorm module) is extended up
    to it: the norm's nodes join the chain when nothing else reads them."""
    if recipe.starts_at is None:
        return members
    if not any(recipe.is_start(node) for node in members):
        extended = _extended_to(members, recipe.is_start)
        if extended is None:
            raise ChainError(f"the subgraph has no {recipe.start_text}, nor does any input come straight from one: "
                             f"not the {recipe.title} chain the replacement stands for{_other_start(members, recipe)}")
        members = extended
    for i, node in enumerate(members):
        if recipe.is_start(node):
            # a start told by its operand begins at that operand when the site computes it (the + 1 of 1 + scale)
            own = [members.index(a) for a in node.all_input_nodes if a in members and recipe.start_operand
                   and op_target_name(a.target) == recipe.start_operand[0]]
            return _to_end(_past_start(members[min(own, default=i):]), recipe.ends)
    raise AssertionError("unreachable: members hold the start op")


# How far above a site's inputs a refusal looks for the norm that produced them (an RMSNorm's rsqrt sits two or three
# ops above its output: the multiply by it, a weight, a cast).
_OTHER_START_DEPTH = 4


def _other_start(members: list, recipe: Recipe) -> str:
    """The refusal's last words when a site's input comes from another op than the recipe's start (an RMSNorm where
    the recipe wants a LayerNorm): which op, what it is, and the way out (the recipe's `other_starts`)."""
    if not recipe.other_starts:
        return ""
    member_set = set(members)
    own = next((n for n in members if n.op == "call_function" and target_name(n.target) in recipe.other_starts), None)
    if own is not None:  # the site computes that norm itself (Mochi's modulated RMSNorm module)
        what = recipe.other_starts[target_name(own.target)]
        return f"; it computes {what} ({own.name}): {recipe.other_starts_way_out}"
    frontier, seen = outside_inputs(members, member_set), set()
    for _ in range(_OTHER_START_DEPTH):
        for node in frontier:
            what = recipe.other_starts.get(target_name(node.target)) if node.op == "call_function" else None
            if what is not None:
                return f"; its input comes from {what} ({node.name}): {recipe.other_starts_way_out}"
        seen.update(frontier)
        frontier = [a for n in frontier if n.op == "call_function" for a in n.all_input_nodes if a not in seen]
    return ""


# Ops reshaping or casting a value on its way into the chain (scale.unsqueeze(1)): walked through to what they carry.
_VIEWS = ("aten.unsqueeze.default", "aten.view.default", "aten.reshape.default", "aten._to_copy.default",
          "prims.convert_element_type.default")


def absorbed(members: list, op: str, literal: float) -> list:
    """`members` with the nodes outside them that compute an input as `op`(input, literal) for them alone, and the
    views carrying it in (the `1 + scale` a model computes a line before the modulation reads it), in graph order."""
    member_set = set(members)
    grown = True
    while grown:
        grown = False
        for node in outside_inputs(members, member_set):
            path = [node]
            while (path[-1].op == "call_function" and target_name(path[-1].target) in _VIEWS
                   and hasattr(path[-1].args[0], "op")):
                path.append(path[-1].args[0])
            head = path[-1]
            inside = member_set | set(path)
            if (head.op == "call_function" and target_name(head.target) == op
                    and any(is_literal(a, literal) for a in head.args)
                    and all(u in inside for n in path for u in n.users)):
                member_set |= set(path)
                grown = True
        order = {n: k for k, n in enumerate(members[0].graph.nodes)}
        members = sorted(member_set, key=order.__getitem__)
    return members


_CASTS = ("aten._to_copy.default", "prims.convert_element_type.default")


def _to_end(members: list, ends: tuple[str, ...]) -> list:
    """`members` up to the last node of an `ends` op and the casts of its value right after it: what a site computes
    from the chain's result (the projection after a modulation) stays in the graph. All of them without `ends`."""
    last = max((k for k, n in enumerate(members) if target_name(n.target) in ends), default=None)
    if last is None:
        return members
    kept, tail = members[:last + 1], members[last]
    for node in members[last + 1:]:
        if target_name(node.target) in _CASTS and node.args and node.args[0] is tail:
            kept.append(node)
            tail = node
    return kept


def _past_start(members: list) -> list:
    """`members` (its first node the start op) without what only computes the chain's other inputs: a node stays
    when the start op's value reaches it, or when every user of it stays (the view of scale the modulation
    multiplies by), but never a getitem of a node that does not (the conditioning's chunk, whose other parts other
    chains read: a chain input it is) nor a node reading several values from outside (a gather by index)."""
    member_set = set(members)
    kept, stack = set(), [members[0]]
    while stack:
        node = stack.pop()
        if node not in kept:
            kept.add(node)
            stack.extend(u for u in node.users if u in member_set)
    for node in reversed(members):
        if node in kept or not node.users or not all(u in kept for u in node.users):
            continue
        if target_name(node.target) == "getitem" and node.args[0] not in kept:
            continue
        if len([a for a in node.all_input_nodes if a not in kept]) > 1:
            continue  # it combines values (MiniMax-H3's gather of shift by index): what it computes is an input
        kept.add(node)
    return [n for n in members if n in kept]


def chain_start(recipes: Sequence[Recipe]) -> Callable[[Any], bool] | None:
    """Whether a node starts one of the op's chains (any of its `recipes`' start), by which a site holding several is
    split; None when no form has a start op."""
    starting = [r for r in recipes if r.starts_at]
    if not starting:
        return None
    return lambda node: any(r.is_start(node) for r in starting)


def chains_from(nodes: Sequence[Any], is_start: Callable[[Any], bool]) -> list[list]:
    """A site's nodes as one list per chain that starts at a node `is_start` accepts (in the site, or producing its
    input):
    the site's values used outside it whose computation within the site reaches back to such a node, each with
    that computation, in graph order. A block's inline code applying two modulations (Wan's attention and
    feed-forward) holds two AdaLN chains; what computes scale and shift for both is left to the graph.
    A computation of casts and views alone is none: the `x.float()` a block hands its norm (Kandinsky 5) reaches
    back to the norm before it, but computes nothing of the op."""
    member_set = set(nodes)
    order = {n: k for k, n in enumerate(nodes)}
    parts = []
    for out in (n for n in nodes if any(u not in member_set for u in n.users)):
        cone = ancestors(out, member_set)
        if not any(is_start(n) or target_name(n.target) not in PASS_THROUGH for n in cone):
            continue
        starts = any(is_start(n) for n in cone) or _extended_to(sorted(cone, key=order.__getitem__),
                                                                 is_start) is not None
        if starts:
            parts.append(sorted(cone, key=order.__getitem__))
    return parts


def form_for_site(forms: Sequence[Recipe], nodes: Sequence[Any]) -> Recipe | None:
    """The first of `forms` whose chain start the site's `nodes` hold or take their input from (None: none does)."""
    members = list(nodes)
    for form in (f for f in forms if f.starts_at):
        # a start told by its operand (the multiply by 1 + scale) is the modulation's own op, never a module's above
        extends = form.start_operand is None and members and _extended_to(members, form.is_start) is not None
        if any(form.is_start(n) for n in members) or extends:
            return form
    return None


def _extended_to(members: list, is_start: Callable[[Any], bool]) -> list | None:
    """`members` with the start node (and the pass-through nodes after it) that computes one of their inputs, in
    graph order; None when no input comes from such a node. When something else reads the norm too (a second
    modulation of the same normalised x), the chain shares it: see shared_start."""
    member_set = set(members)
    for node in outside_inputs(members, member_set):
        path = []
        while node.op == "call_function" and target_name(node.target) in PASS_THROUGH and node.args:
            path.append(node)
            node = node.args[0]
            if not hasattr(node, "op"):
                break
        if not is_start(node):
            continue
        joined = member_set | set(path) | {node}
        order = {n: k for k, n in enumerate(node.graph.nodes)}
        return sorted(joined, key=order.__getitem__)
    return None


def ancestors(out, members: set) -> set:
    seen, stack = set(), [out]
    while stack:
        node = stack.pop()
        if node in seen or node not in members:
            continue
        seen.add(node)
        stack.extend(node.all_input_nodes)
    return seen


def outside_inputs(members: list, member_set: set) -> list:
    """The nodes outside the subgraph it reads, in first-use order."""
    inputs: list = []
    for node in members:
        for arg in node.all_input_nodes:
            if arg not in member_set and arg not in inputs:
                inputs.append(arg)
    return inputs
