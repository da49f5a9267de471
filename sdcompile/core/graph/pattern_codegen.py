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

Here: checking the site is one chain and binding its inputs and constants. The chain's data: pattern_chain.py;
the recipes and the replacement they write: pattern_recipes.py; each node written as source: chain_source.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from sdcompile.core.graph.chain_source import ChainWriter
from sdcompile.core.graph.pattern_chain import Chain, ChainError, ChainInput, Constant, op_target_name, spell_constant
from sdcompile.core.graph.pattern_recipes import ConstantRule, Recipe


# ---------------------------------------------------------------------------------------------- node meta
def _val(node) -> Any:
    return node.meta.get("val")


def _shape(node) -> tuple[int, ...]:
    val = _val(node)
    if val is None or not hasattr(val, "shape"):
        raise ChainError(f"node {node.name} carries no tensor metadata (meta['val'])")
    return tuple(int(d) for d in val.shape)


def _dtype(node) -> str:
    return str(_val(node).dtype)


# ---------------------------------------------------------------------------------------------- extraction
def _flows_into(node, op: str, members: set) -> bool:
    """Whether `node`'s value reaches a node of `op` inside the chain."""
    seen, stack = set(), [u for u in node.users if u in members]
    while stack:
        user = stack.pop()
        if user in seen:
            continue
        seen.add(user)
        if _safe_name(user.target) == op:
            return True
        stack.extend(u for u in user.users if u in members)
    return False


def _bind_roles(recipe: Recipe, inputs: list, members: set) -> dict[str, Any]:
    """role name -> input node: the one assignment that satisfies every role's rank, size and flow constraints."""
    if len(inputs) != len(recipe.roles):
        names = ", ".join(r.name for r in recipe.roles)
        raise ChainError(f"the subgraph takes {len(inputs)} input(s) ({', '.join(n.name for n in inputs)}); the "
                         f"{recipe.title} replacement binds {len(recipe.roles)} ({names})")
    fits = []
    for perm in itertools.permutations(inputs):
        binding = {role.name: node for role, node in zip(recipe.roles, perm, strict=True)}
        ok = True
        for role in recipe.roles:
            shape = _shape(binding[role.name])
            if role.rank is not None and len(shape) != role.rank:
                ok = False
            if role.last_dim_of is not None:
                other = _shape(binding[role.last_dim_of])
                if not shape or not other or shape[-1] != other[-1]:
                    ok = False
            if role.through is not None and not _flows_into(binding[role.name], role.through, members):
                ok = False
            if role.meets is not None and not _meets(binding[role.name], role.meets, members):
                ok = False
        if ok:
            fits.append(binding)
    if len(fits) != 1:
        why = "no assignment fits" if not fits else f"{len(fits)} assignments fit"
        raise ChainError(f"cannot tell which input is which ({why}): roles "
                         + "; ".join(f"{r.name}: {r.description}" for r in recipe.roles))
    return fits[0]


def _upstream(node, members: set) -> set:
    """`node` and everything it is computed from inside the chain, with the chain inputs it reads."""
    seen, stack = set(), [node]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in members:
            stack.extend(current.all_input_nodes)
    return seen


def _mul_operands(members) -> list[tuple[Any, Any]]:
    """(one operand, the other) of every tensor multiply in the chain, both ways round."""
    pairs = []
    for node in members:
        if _safe_name(node.target) == "aten.mul.Tensor" and len(node.all_input_nodes) == 2:
            a, b = node.all_input_nodes
            pairs += [(a, b), (b, a)]
    return pairs


def _meets(node, op: str, members: set) -> bool:
    """Whether `node`'s value multiplies one computed through `op` without it (RoPE's sin meets the rotated half,
    where the negation is; its cos meets x as it is)."""
    for mine, other in _mul_operands(members):
        up_other = _upstream(other, members)
        if node in _upstream(mine, members) and node not in up_other and any(
                n in members and _safe_name(n.target) == op for n in up_other):
            return True
    return False


def _bind_points(recipe: Recipe, binding: dict[str, Any], members: list, var_of: dict) -> tuple:
    """(role, variable) for each bind_at role: the value it enters the first such op of the chain as, when the chain
    reshapes or casts it on the way (RoPE tables unsqueezed to 4-D): the fused op takes that value."""
    member_set, inputs = set(members), set(binding.values())
    points = []
    for role in (r for r in recipe.roles if r.bind_at):
        node = binding[role.name]
        operand = next((a for m in members if _safe_name(m.target) == role.bind_at for a in m.all_input_nodes
                        if node in (up := _upstream(a, member_set)) and not (up & (inputs - {node}))), None)
        if operand is not None and operand is not node:
            points.append((role.name, var_of[operand]))
    return tuple(points)


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


def _safe_name(target) -> str:
    try:
        return op_target_name(target)
    except ChainError:
        return str(target)



def extract_chain(nodes: Sequence[Any], recipe: Recipe, model_dtype: Any,
                  origins: Mapping[str, str] | None = None) -> Chain:
    """The chain the site's `nodes` (graph order) compute, ready to be written as a search function."""
    if not nodes:
        raise ChainError("the site has no nodes in this graph")
    members = _from_start(list(nodes), recipe)
    member_set = set(members)
    _check_op_calls(members)
    out = _single_output(members, member_set)
    _check_reaches(out, members, member_set)
    _check_chain_ops(members, recipe)
    _check_required(members, recipe)

    binding = _bind_roles(recipe, _outside_inputs(members, member_set), member_set)
    constants_at = _find_constants(recipe, members)
    dtype_name = str(model_dtype)
    ordered_inputs = [binding[r.name] for r in recipe.roles]
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
    return Chain(
        inputs=tuple(chain_inputs), ops=tuple(ops), output=out.name, output_var=writer.var_of[out],
        output_shape=_shape(out), output_dtype=out_dtype, constants=tuple(constants), model_dtype=dtype_name,
        signature=signature, bind_points=_bind_points(recipe, binding, members, writer.var_of),
    )


# -------------------------------------------------------------------------------------- what a chain must be
def _check_op_calls(members: list) -> None:
    for node in members:
        if node.op != "call_function":
            raise ChainError(f"node {node.name} is a {node.op}, not an op call")
        op_target_name(node.target)  # raises for non-ATen targets


def _single_output(members: list, member_set: set):
    """The one node whose value is used outside the subgraph."""
    outputs = [n for n in members if any(u not in member_set for u in n.users)]
    if len(outputs) != 1:
        detail = ", ".join(f"{n.name} (used by {', '.join(u.name for u in n.users if u not in member_set)})"
                           for n in outputs)
        raise ChainError(f"the subgraph has {len(outputs)} values used outside it ({detail or 'none'}): a "
                         "replacement can stand for exactly one (mismatch type 5 when an inner value escapes)")
    return outputs[0]


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


def _from_start(members: list, recipe: Recipe) -> list:
    """The site's nodes from the recipe's first op on (a GELU module's projection is not part of the GELU)."""
    if recipe.starts_at is None:
        return members
    for i, node in enumerate(members):
        if node.op == "call_function" and _safe_name(node.target) == recipe.starts_at:
            return members[i:]
    raise ChainError(f"the subgraph has no {recipe.starts_at}: not the {recipe.title} chain the replacement "
                     "stands for")


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
    for role in recipe.roles:
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
