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

Here: checking the site is one chain and its constants; where it starts and ends within the site: chain_extent.py;
binding its inputs to the recipe's roles by data flow: role_binding.py. The chain's data: pattern_chain.py;
the recipes and the replacement they write: pattern_recipes.py; each node written as source: chain_source.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdcompile.core.graph.chain_extent import (
    absorbed,
    ancestors,
    from_start,
    outside_inputs,
    shared_start,
    tables_outside,
)
from sdcompile.core.graph.chain_source import ChainWriter
from sdcompile.core.graph.nodes import keyword_value, target_name
from sdcompile.core.graph.pattern_chain import Chain, ChainError, ChainInput, Constant, op_target_name, spell_constant
from sdcompile.core.graph.pattern_recipes import ConstantRule, Recipe
from sdcompile.core.graph.role_binding import bind_points as _bind_points
from sdcompile.core.graph.role_binding import bind_roles as _bind_roles
from sdcompile.core.graph.role_binding import dtype_of as _dtype
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
            if rule.user and not any(u.op == "call_function" and target_name(u.target) == rule.user
                                     for u in node.users):
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
    members = from_start(list(nodes), recipe) if roles is None else list(nodes)
    if roles is None and recipe.absorbs is not None:
        members = absorbed(members, *recipe.absorbs)
    if roles is None:
        try:
            member_set, shared, out, binding = _bound(members, recipe)
        except ChainError as refused:
            # tables a site builds itself (cos and sin from angles, a packed table split in two) stay in the graph,
            # the fused op taking them as inputs; the refusal stays the one about the site as it is
            trimmed = tables_outside(members, recipe)
            if trimmed == members:
                raise
            try:
                member_set, shared, out, binding = _bound(trimmed, recipe)
            except ChainError:
                raise refused from None
            members = trimmed
    else:
        member_set, shared = set(members), set()
        _check_op_calls(members)
        out = _single_output(members, member_set, shared)
        _check_reaches(out, members, member_set)
        binding = dict(roles)
        if set(outside_inputs(members, member_set)) != set(binding.values()):
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


def _bound(members: list, recipe: Recipe) -> tuple[set, set, Any, dict[str, Any]]:
    """(member set, shared start, output, role -> input) of a chain whose roles the recipe tells apart."""
    member_set = set(members)
    _check_op_calls(members)
    shared = shared_start(members, member_set, recipe)
    out = _single_output(members, member_set, shared)
    _check_reaches(out, members, member_set)
    _check_chain_ops(members, recipe)
    _check_required(members, recipe)
    return member_set, shared, out, _bind_roles(recipe, outside_inputs(members, member_set), member_set)


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


def _check_reaches(out, members: list, member_set: set) -> None:
    reachable = ancestors(out, member_set)
    stray = [n.name for n in members if n not in reachable]
    if stray:
        raise ChainError(f"nodes {', '.join(stray)} do not lead to the output {out.name}")


def _check_chain_ops(members: list, recipe: Recipe) -> None:
    missing = [op for op in recipe.chain_ops if op not in {op_target_name(n.target) for n in members}]
    if missing:
        raise ChainError(f"the subgraph has no {', '.join(missing)}: not the {recipe.title} chain the "
                         f"replacement stands for")


def _check_required(members: list, recipe: Recipe) -> None:
    mismatch = required_mismatch(members, recipe)
    if mismatch is not None:
        node, key, has, wants = mismatch
        raise ChainError(f"{node.name} ({target_name(node.target)}) has {key}={has!r}; the {recipe.title} "
                         f"replacement stands for {key}={wants!r} only")


def required_mismatch(nodes: Sequence[Any], recipe: Recipe) -> tuple[Any, str, Any, Any] | None:
    """(node, keyword, its value, the value the fused op needs) for the first node computing other math than the
    fused op does (npu_fast_gelu stands for the tanh GELU only: an exact GELU is not its to replace); else None."""
    for node in nodes:
        wanted = recipe.requires.get(target_name(node.target), {}) if node.op == "call_function" else {}
        for key, value in wanted.items():
            if (has := keyword_value(node, key)) != value:
                return node, key, has, value
    return None


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
            dtype_expr="dtype" if dtype == dtype_name else dtype, dim_order=_dim_order(node),
        ))
    return chain_inputs


def _dim_order(node) -> tuple[int, ...]:
    """The node's dims from outermost to innermost in memory, when that is not their order (see ChainInput)."""
    val = _val(node)
    if val is None or not hasattr(val, "stride") or val.is_contiguous():
        return ()
    stride = val.stride()
    order = tuple(sorted(range(len(stride)), key=lambda d: (-stride[d], d)))
    return () if order == tuple(range(len(stride))) else order


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
