"""An ATen subgraph, as the pass sees it at one site, turned into Python: a pattern's search function and a
graph pass's chain table.

The search function is written from the graph, node by node, so what the matcher compares is what the model
graph holds by construction:

    every op is its exact overload            torch.ops.aten.add.Scalar, not `x + eps`        (mismatch type 1)
    every literal is the graph's own value    9.999999974752427e-07, [3], True                 (type 2)
    every cast in the graph is in the pattern aten._to_copy.default(x, dtype=torch.float32)   (type 3)
    every view/reshape/unsqueeze too          with the graph's shape lists                      (type 4)

Only two values are written symbolically: the model's dtype becomes the factory's `dtype` argument (so the
factory can be called per dtype whose graph has this same shape), and a device becomes the first tensor
input's `.device` (the graph records the device the model ran on). Constants a recipe names (an RMSNorm's
epsilon) become factory arguments, spelled so that the factory reproduces the graph's exact value.

    chain = extract_chain(nodes, recipe, model_dtype, origins)    # raises ChainError saying why not
    chain.search_body        lines of the search function's body
    chain.signature          equal for sites one pattern serves (ops, literals, casts; not shapes or ranks)
    chain.ops[i].table_args  the chain as a graph pass's matching table (path B)

Here: checking the site is one chain, its constants, and where it starts; binding its inputs to the recipe's roles
by data flow: role_binding.py. The chain's data: pattern_chain.py;
the recipes and the replacement they write: pattern_recipes.py; each node written as source: chain_source.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sdcompile.core.graph.chain_source import ChainWriter
from sdcompile.core.graph.pattern_chain import (
    PASS_THROUGH,
    Chain,
    ChainError,
    ChainInput,
    Constant,
    op_target_name,
    spell_constant,
)
from sdcompile.core.graph.pattern_recipes import ConstantRule, Recipe
from sdcompile.core.graph.role_binding import bind_points as _bind_points
from sdcompile.core.graph.role_binding import bind_roles as _bind_roles
from sdcompile.core.graph.role_binding import dtype_of as _dtype
from sdcompile.core.graph.role_binding import safe_name as _safe_name
from sdcompile.core.graph.role_binding import shape_of as _shape
from sdcompile.core.graph.role_binding import value_of as _val


# ---------------------------------------------------------------------------------------------- extraction
def _find_constants(recipe: Recipe, members: list) -> dict[tuple[str, int], ConstantRule]:
    """(node name, arg index) -> the recipe constant that literal is."""
    found: dict[tuple[str, int], ConstantRule] = {}
    for rule in recipe.constants:
        hits = []
        for node in members:
            if op_target_name(node.target) not in rule.ops:
                continue
            if rule.user and not any(u.op == "call_function" and _safe_name(u.target) == rule.user for u in node.users):
                continue
            if len(node.args) > rule.arg and isinstance(node.args[rule.arg], float):
                hits.append(node)
        if len(hits) != 1:
            raise ChainError(f"expected one {'/'.join(rule.ops)} holding {rule.name}"
                             + (f" (feeding {rule.user})" if rule.user else "") + f", found {len(hits)}")
        found[(hits[0].name, rule.arg)] = rule
    return found


def extract_chain(nodes: Sequence[Any], recipe: Recipe, model_dtype: Any,
                  origins: Mapping[str, str] | None = None, roles: Mapping[str, Any] | None = None) -> Chain:
    """The chain the site's `nodes` (graph order) compute, ready to be written as a search function. `roles` (role ->
    input node) writes a chain whose roles are already known: the same chain after other replacements took some of
    its ops (its nodes are then taken as they are, and need not hold the recipe's ops)."""
    if not nodes:
        raise ChainError("the site has no nodes in this graph")
    members = _from_start(list(nodes), recipe) if roles is None else list(nodes)
    if roles is None and recipe.absorbs is not None:
        members = _absorbed(members, *recipe.absorbs)
    member_set = set(members)
    _check_op_calls(members)
    shared = _shared_start(members, member_set, recipe) if roles is None else set()
    out = _single_output(members, member_set, shared)
    _check_reaches(out, members, member_set)
    if roles is None:
        _check_chain_ops(members, recipe)
        _check_required(members, recipe)
        binding = _bind_roles(recipe, _outside_inputs(members, member_set), member_set)
    else:
        binding = dict(roles)
        if set(_outside_inputs(members, member_set)) != set(binding.values()):
            raise ChainError("the chain reads other values than its roles' inputs once other replacements took "
                             "part of it")
    constants_at = _find_constants(recipe, members)
    dtype_name = str(model_dtype)
    ordered_inputs = [binding[r.name] for r in recipe.roles if r.name in binding]
    device_owner = next((n for n in ordered_inputs if _val(n) is not None and hasattr(_val(n), "device")), None)
    writer = ChainWriter(recipe, members, binding, constants_at, dtype_name, device_owner,
                         None if device_owner is None else str(_val(device_owner).device))
    written = [writer.write(node) for node in members]
    ops = [op for op, _ in written]
    signature_ops = [form for _, form in written]

    chain_inputs = _chain_inputs(recipe, binding, dtype_name, origins or {})
    constants = _constants(recipe, members, constants_at)
    out_dtype = _dtype(out)
    # Ranks are not part of it: a chain whose literals do not depend on the rank (mean over [-1]) is one pattern
    # for every rank; one that does (mean over [3]) differs in its literals anyway.
    signature = (
        tuple(signature_ops),
        tuple((i.role, i.dtype_expr) for i in chain_inputs),
        "dtype" if out_dtype == dtype_name else out_dtype,
        tuple((c.name, c.fp32_rounded) for c in constants),
    )
    shared_at = tuple(sorted(members.index(n) for n in shared))
    return Chain(
        inputs=tuple(chain_inputs), ops=tuple(ops), output=out.name, output_var=writer.var_of[out],
        output_shape=_shape(out), output_dtype=out_dtype, constants=tuple(constants), model_dtype=dtype_name,
        signature=signature + (shared_at,), bind_points=_bind_points(recipe, binding, members, writer.var_of),
        shared=shared_at,
    )


# -------------------------------------------------------------------------------------- what a chain must be
def _check_op_calls(members: list) -> None:
    for node in members:
        if node.op != "call_function":
            raise ChainError(f"node {node.name} is a {node.op}, not an op call")
        op_target_name(node.target)  # raises for non-ATen targets


def _single_output(members: list, member_set: set, shared: set):
    """The one node whose value is used outside the subgraph (besides the `shared` start)."""
    outputs = [n for n in members if n not in shared and any(u not in member_set for u in n.users)]
    if len(outputs) != 1:
        detail = ", ".join(f"{n.name} (used by {', '.join(u.name for u in n.users if u not in member_set)})"
                           for n in outputs)
        raise ChainError(f"the subgraph has {len(outputs)} values used outside it ({detail or 'none'}): a "
                         "replacement can stand for exactly one (mismatch type 5 when an inner value escapes)")
    return outputs[0]


def _shared_start(members: list, member_set: set, recipe: Recipe) -> set:
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
            if user in member_set and user not in carried and _safe_name(user.target) in _PASS_THROUGH:
                carried.add(user)
                frontier.append(user)

    def escapes(n) -> bool:
        return any(u not in member_set for u in n.users)

    # shared only beside an output of its own: a chain that ends at the start (a GELU) has nothing to share
    own_output = any(escapes(n) for n in members if n not in carried)
    return carried if own_output and any(escapes(n) for n in carried) else set()


def _check_reaches(out, members: list, member_set: set) -> None:
    reachable = _ancestors(out, member_set)
    stray = [n.name for n in members if n not in reachable]
    if stray:
        raise ChainError(f"nodes {', '.join(stray)} do not lead to the output {out.name}")


def _check_chain_ops(members: list, recipe: Recipe) -> None:
    missing = [op for op in recipe.chain_ops if op not in {op_target_name(n.target) for n in members}]
    if missing:
        raise ChainError(f"the subgraph has no {', '.join(missing)}: not the {recipe.title} chain the "
                         f"replacement stands for")


_PASS_THROUGH = PASS_THROUGH


def _from_start(members: list, recipe: Recipe) -> list:
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
    own = next((n for n in members if n.op == "call_function" and _safe_name(n.target) in recipe.other_starts), None)
    if own is not None:  # the site computes that norm itself (Mochi's modulated RMSNorm module)
        what = recipe.other_starts[_safe_name(own.target)]
        return f"; it computes {what} ({own.name}): {recipe.other_starts_way_out}"
    frontier, seen = _outside_inputs(members, member_set), set()
    for _ in range(_OTHER_START_DEPTH):
        for node in frontier:
            what = recipe.other_starts.get(_safe_name(node.target)) if node.op == "call_function" else None
            if what is not None:
                return f"; its input comes from {what} ({node.name}): {recipe.other_starts_way_out}"
        seen.update(frontier)
        frontier = [a for n in frontier if n.op == "call_function" for a in n.all_input_nodes if a not in seen]
    return ""


# Ops reshaping or casting a value on its way into the chain (scale.unsqueeze(1)): walked through to what they carry.
_VIEWS = ("aten.unsqueeze.default", "aten.view.default", "aten.reshape.default", "aten._to_copy.default",
          "prims.convert_element_type.default")


def _absorbed(members: list, op: str, literal: float) -> list:
    """`members` with the nodes outside them that compute an input as `op`(input, literal) for them alone, and the
    views carrying it in (the `1 + scale` a model computes a line before the modulation reads it), in graph order."""
    member_set = set(members)
    grown = True
    while grown:
        grown = False
        for node in _outside_inputs(members, member_set):
            path = [node]
            while (path[-1].op == "call_function" and _safe_name(path[-1].target) in _VIEWS
                   and hasattr(path[-1].args[0], "op")):
                path.append(path[-1].args[0])
            head = path[-1]
            inside = member_set | set(path)
            if (head.op == "call_function" and _safe_name(head.target) == op
                    and any(_is_literal(a, literal) for a in head.args)
                    and all(u in inside for n in path for u in n.users)):
                member_set |= set(path)
                grown = True
        order = {n: k for k, n in enumerate(members[0].graph.nodes)}
        members = sorted(member_set, key=order.__getitem__)
    return members


def _is_literal(value, literal: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == literal


_CASTS = ("aten._to_copy.default", "prims.convert_element_type.default")


def _to_end(members: list, ends: tuple[str, ...]) -> list:
    """`members` up to the last node of an `ends` op and the casts of its value right after it: what a site computes
    from the chain's result (the projection after a modulation) stays in the graph. All of them without `ends`."""
    last = max((k for k, n in enumerate(members) if _safe_name(n.target) in ends), default=None)
    if last is None:
        return members
    kept, tail = members[:last + 1], members[last]
    for node in members[last + 1:]:
        if _safe_name(node.target) in _CASTS and node.args and node.args[0] is tail:
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
        if _safe_name(node.target) == "getitem" and node.args[0] not in kept:
            continue
        if len([a for a in node.all_input_nodes if a not in kept]) > 1:
            continue  # it combines values (MiniMax-H3's gather of shift by index): what it computes is an input
        kept.add(node)
    return [n for n in members if n in kept]


def chains_from(nodes: Sequence[Any], is_start: Callable[[Any], bool]) -> list[list]:
    """A site's nodes as one list per chain that starts at a node `is_start` accepts (in the site, or producing its
    input):
    the site's values used outside it whose computation within the site reaches back to such a node, each with
    that computation, in graph order. A block's inline code applying two modulations (Wan's attention and
    feed-forward) holds two AdaLN chains; what computes scale and shift for both is left to the graph."""
    member_set = set(nodes)
    order = {n: k for k, n in enumerate(nodes)}
    parts = []
    for out in (n for n in nodes if any(u not in member_set for u in n.users)):
        cone = _ancestors(out, member_set)
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
    modulation of the same normalised x), the chain shares it: see _shared_start."""
    member_set = set(members)
    for node in _outside_inputs(members, member_set):
        path = []
        while node.op == "call_function" and _safe_name(node.target) in _PASS_THROUGH and node.args:
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


def _check_required(members: list, recipe: Recipe) -> None:
    """Keyword values the fused op's semantics depend on (npu_fast_gelu stands for the tanh GELU only)."""
    for node in members:
        wanted = recipe.requires.get(_safe_name(node.target), {})
        for key, value in wanted.items():
            if node.kwargs.get(key) != value:
                raise ChainError(f"{node.name} ({_safe_name(node.target)}) has {key}={node.kwargs.get(key)!r}; "
                                 f"the {recipe.title} replacement stands for {key}={value!r} only")


def _ancestors(out, members: set) -> set:
    seen, stack = set(), [out]
    while stack:
        node = stack.pop()
        if node in seen or node not in members:
            continue
        seen.add(node)
        stack.extend(node.all_input_nodes)
    return seen


# ------------------------------------------------------------------------------------- inputs and constants
def _outside_inputs(members: list, member_set: set) -> list:
    """The nodes outside the subgraph it reads, in first-use order."""
    inputs: list = []
    for node in members:
        for arg in node.all_input_nodes:
            if arg not in member_set and arg not in inputs:
                inputs.append(arg)
    return inputs


def _chain_inputs(recipe: Recipe, binding: dict[str, Any], dtype_name: str,
                  origins: Mapping[str, str]) -> list[ChainInput]:
    chain_inputs = []
    for role in (r for r in recipe.roles if r.name in binding):
        node = binding[role.name]
        dtype = _dtype(node)
        holder = node.op if node.op in ("placeholder", "get_attr") else "computed"
        chain_inputs.append(ChainInput(
            role=role.name, node=node.name, holder=holder,
            origin=origins.get(node.name, holder), shape=_shape(node), dtype=dtype,
            dtype_expr="dtype" if dtype == dtype_name else dtype,
        ))
    return chain_inputs


def _constants(recipe: Recipe, members: list, constants_at: dict[tuple[str, int], ConstantRule]) -> list[Constant]:
    """The recipe's constants as the graph holds them, in the recipe's order."""
    constants = []
    for (node_name, index), rule in constants_at.items():
        node = next(n for n in members if n.name == node_name)
        value = float(node.args[index])
        spelled, rounded = spell_constant(value)
        constants.append(Constant(rule.name, value, spelled, rounded, node_name, op_target_name(node.target)))
    constants.sort(key=lambda c: [r.name for r in recipe.constants].index(c.name))
    return constants
