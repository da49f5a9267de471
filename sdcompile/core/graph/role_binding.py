"""Which input of a chain is which of the recipe's roles: told by what each does in the chain (it is normalised,
negated, multiplies the normalised value, is added last, is argument k of an op), never by name or position.

    binding = bind_roles(recipe, inputs, members)     # role -> input node; ChainError unless exactly one fits
"""

from __future__ import annotations

import itertools
from typing import Any

from sdcompile.core.graph.nodes import target_name
from sdcompile.core.graph.pattern_chain import ChainError, producer
from sdcompile.core.graph.pattern_recipes import Recipe


def value_of(node) -> Any:
    return node.meta.get("val")


def shape_of(node) -> tuple[int, ...]:
    val = value_of(node)
    if val is None or not hasattr(val, "shape"):
        raise ChainError(f"node {node.name} carries no tensor metadata (meta['val'])")
    return tuple(int(d) for d in val.shape)


def dtype_of(node) -> str:
    return str(value_of(node).dtype)


def flows_into(node, op: str, members: set) -> bool:
    """Whether `node`'s value reaches a node of `op` inside the chain."""
    seen, stack = set(), [u for u in node.users if u in members]
    while stack:
        user = stack.pop()
        if user in seen:
            continue
        seen.add(user)
        if target_name(user.target) == op:
            return True
        stack.extend(u for u in user.users if u in members)
    return False


def _role_sets(recipe: Recipe, count: int) -> list[tuple]:
    """The recipe's roles a chain with `count` inputs can have: every required role, and as many optional ones."""
    required = [r for r in recipe.roles if not r.optional]
    optional = [r for r in recipe.roles if r.optional]
    extra = count - len(required)
    if extra < 0 or extra > len(optional):
        return []
    return [tuple(r for r in recipe.roles if not r.optional or r in chosen)
            for chosen in itertools.combinations(optional, extra)]


def _fits(role, binding: dict[str, Any], members: set, recipe: Recipe) -> bool:
    """Whether the input bound to `role` meets the role's rank (or the recipe's lift rank), size and flow
    constraints. A table of a recipe with a partial rotation may be narrower than the role it is last_dim_of."""
    node = binding[role.name]
    shape = shape_of(node)
    lift, part = recipe.lift, recipe.partial
    lower = lift.from_rank if lift is not None and role.name in lift.roles else None
    narrower = part is not None and role.name in part.tables and role.last_dim_of == part.role
    # more dims than the op takes, where the op's shapes let a layout flatten them (x [B, T, H, W, D])
    flattened = bool(recipe.graph_call.shapes) and role.name == recipe.output_like and role.rank is not None \
        and len(shape) > role.rank
    if role.rank is not None and len(shape) not in (role.rank, lower) and not flattened:
        return False
    if role.trailing is not None and shape[-len(role.trailing):] != role.trailing:
        return False
    if role.last_dim_of is not None:
        other = shape_of(binding[role.last_dim_of])
        if not shape or not other or not (shape[-1] == other[-1] or (narrower and shape[-1] < other[-1])):
            return False
    return ((role.through is None or flows_into(node, role.through, members))
            and (role.meets is None or _meets(node, role.meets, members))
            and (role.added_to is None or _meets(node, role.added_to, members, _ADDS))
            and (role.arg_of is None or _reaches_arg(node, *role.arg_of, members))
            and (role.only_in_arg is None or _only_in_arg(node, *role.only_in_arg, members))
            and not (role.not_from and target_name(producer(node).target) in role.not_from))


def bind_roles(recipe: Recipe, inputs: list, members: set) -> dict[str, Any]:
    """role name -> input node: the one assignment that satisfies every role's rank, size and flow constraints.
    Optional roles (a LayerNorm's weight) take part only when the chain has inputs for them."""
    role_sets = _role_sets(recipe, len(inputs))
    if not role_sets:
        names = ", ".join(r.name + (" (optional)" if r.optional else "") for r in recipe.roles)
        raise ChainError(f"the subgraph takes {len(inputs)} input(s) ({', '.join(n.name for n in inputs)}); the "
                         f"{recipe.title} replacement binds {names}")
    fits = []
    for roles in role_sets:
        for perm in itertools.permutations(inputs):
            binding = {role.name: node for role, node in zip(roles, perm, strict=True)}
            if all(_fits(role, binding, members, recipe) for role in roles):
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


_MULTIPLIES = ("aten.mul.Tensor",)
_ADDS = ("aten.add.Tensor",)


def _operands(members, ops: tuple[str, ...]) -> list[tuple[Any, Any]]:
    """(one operand, the other) of every two-tensor node of `ops` in the chain, both ways round."""
    pairs = []
    for node in members:
        if target_name(node.target) in ops and len(node.all_input_nodes) == 2:
            a, b = node.all_input_nodes
            pairs += [(a, b), (b, a)]
    return pairs


def _meets(node, op: str, members: set, combine: tuple[str, ...] = _MULTIPLIES) -> bool:
    """Whether `node`'s value multiplies (or, with `combine` = adds, is added to) one computed through `op` without
    it (RoPE's sin meets the rotated half, where the negation is; AdaLN's scale the normalised x, its shift the
    modulated one)."""
    for mine, other in _operands(members, combine):
        up_other = _upstream(other, members)
        if node in _upstream(mine, members) and node not in up_other and any(
                n in members and target_name(n.target) == op for n in up_other):
            return True
    return False


def _reaches_arg(node, op: str, index: int, members: set) -> bool:
    """Whether `node` is what argument `index` of an `op` node in the chain is computed from (through casts and
    views only: nothing else flows in)."""
    for member in members:
        if target_name(member.target) != op or len(member.args) <= index:
            continue
        arg = member.args[index]
        if hasattr(arg, "all_input_nodes"):
            up = _upstream(arg, members)
            if node in up and not any(n not in members and n is not node for n in up):
                return True
    return False


def _only_in_arg(node, op: str, index: int, members: set) -> bool:
    """Whether `node` flows into argument `index` of an `op` node in the chain and into none of its other tensor
    arguments (a strided RoPE's sin reaches the subtracted product of `x1 * cos - x2 * sin` only)."""
    for member in members:
        if target_name(member.target) != op or len(member.args) <= index:
            continue
        tensors = [(k, a) for k, a in enumerate(member.args) if hasattr(a, "all_input_nodes")]
        reached = {k for k, a in tensors if node in _upstream(a, members)}
        if reached == {index}:
            return True
    return False


def bind_points(recipe: Recipe, binding: dict[str, Any], members: list, var_of: dict) -> tuple:
    """(role, variable) for each bind_at role: the value it enters the first such op of the chain as, when the chain
    reshapes or casts it on the way (RoPE tables unsqueezed to 4-D): the fused op takes that value."""
    member_set, inputs = set(members), set(binding.values())
    points = []
    for role in (r for r in recipe.roles if r.bind_at and r.name in binding):
        node = binding[role.name]
        operand = next((a for m in members if target_name(m.target) == role.bind_at for a in m.all_input_nodes
                        if node in (up := _upstream(a, member_set)) and not (up & (inputs - {node}))), None)
        if operand is not None and operand is not node:
            points.append((role.name, var_of[operand]))
    return tuple(points)
