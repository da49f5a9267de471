"""The replacement recipes of catalogs/scaffold.toml, and the replacement expression and casts each writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.pattern_chain import Chain, ChainError


@dataclass(frozen=True)
class Role:
    name: str  # the search function's parameter ("x", "weight")
    rank: int | None = None  # required rank, when the role has one (a norm weight is 1-D)
    last_dim_of: str | None = None  # its size equals the last dim of that role (weight [D] of x [..., D])
    description: str = ""
    through: str | None = None  # it flows into a node of this op inside the chain (AdaLN's scale: the multiply)
    meets: str | None = None  # it multiplies a value computed through this op (RoPE's sin: the rotated half)
    bind_at: str | None = None  # the fused op takes it as it enters this op (RoPE's tables, once broadcast)


@dataclass(frozen=True)
class ConstantRule:
    name: str  # the factory argument ("epsilon")
    ops: tuple[str, ...]  # the node holding it ("aten.add.Scalar", "aten.add.Tensor")
    user: str | None  # ...whose user is this op ("aten.rsqrt.default"), when that pins it down
    arg: int  # position of the literal in that node's args


@dataclass(frozen=True)
class GraphCall:
    """How a graph pass inserts the fused op: `op(*args, **kwargs)`, then `[output]` when it returns a tuple."""

    op: str  # "npu.npu_rms_norm.default"
    args: tuple[str, ...]  # role names
    kwargs: tuple[tuple[str, str], ...]  # (keyword, constant name)
    output: int | None


@dataclass(frozen=True)
class Recipe:
    op: str  # "rmsnorm"
    title: str
    fused_op: str  # catalog name in fused_ops.toml: "npu::npu_rms_norm"
    imports: tuple[str, ...]  # modules the replacement needs under `if npu_available:` ("torch_npu")
    call: str  # the replacement expression, with {role} and {constant} fields
    graph_call: GraphCall
    output_like: str  # the role whose shape and dtype the fused op's output has
    same_dtype: tuple[str, ...]  # roles the fused op wants in `output_like`'s dtype
    roles: tuple[Role, ...]
    constants: tuple[ConstantRule, ...]
    chain_ops: tuple[str, ...]  # ops a site's chain must contain to be this primitive at all
    starts_at: str | None = None  # the chain begins at this op's first node; site nodes before it stay outside
    requires: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # op -> keyword -> required value
    approximation: float = 0.0  # max |fused - chain| in exact arithmetic, when the fused op approximates the chain
    note: str = ""
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # call field -> literals, tried in order
    cast_output: bool = False  # the fused op returns another dtype than output_like's: always cast to the chain's


def load_recipes() -> dict[str, Recipe]:
    """The replacement recipes of catalogs/scaffold.toml, by op."""
    from sdcompile.catalogs import load

    recipes = {}
    for op, table in load("scaffold")["recipe"].items():
        gc = table["graph_call"]
        recipes[op] = Recipe(
            op=op,
            title=table["title"],
            fused_op=table["fused_op"],
            imports=tuple(table.get("imports", ())),
            call=table["call"],
            graph_call=GraphCall(gc["op"], tuple(gc["args"]), tuple(gc.get("kwargs", {}).items()), gc.get("output")),
            output_like=table["output_like"],
            same_dtype=tuple(table.get("same_dtype", ())),
            roles=tuple(Role(r["name"], r.get("rank"), r.get("last_dim_of"), r.get("description", ""),
                             r.get("through"), r.get("meets"), r.get("bind_at")) for r in table["roles"]),
            constants=tuple(ConstantRule(name, tuple(c["ops"]), c.get("user"), c["arg"])
                            for name, c in table.get("constants", {}).items()),
            chain_ops=tuple(table.get("chain_ops", ())),
            starts_at=table.get("starts_at"),
            requires={op: dict(kw) for op, kw in table.get("requires", {}).items()},
            approximation=float(table.get("approximation", 0.0)),
            note=table.get("note", ""),
            choices={k: tuple(v) for k, v in table.get("choices", {}).items()},
            cast_output=bool(table.get("cast_output", False)),
        )
    return recipes


# ------------------------------------------------------------------------------------------- replacement
def replacement_expr(recipe: Recipe, chain: Chain, bound: Mapping[str, str] | None = None,
                     choice: Mapping[str, str] | None = None) -> str:
    """The replacement's return expression: the recipe's fused call, with the casts the chain's dtypes need.
    `bound` (role -> chain variable): roles the fused op takes as a value the chain computes from them first
    (a zero-centred norm's `weight + 1`, RoPE tables once broadcast), recomputed by replacement_prelude; a
    same_dtype role is cast to output_like's dtype. `choice`: the literal for each of the recipe's choices."""
    by_role = {i.role: i for i in chain.inputs}
    like = by_role[recipe.output_like]
    bound = bound or {}
    fields = dict(choice or {k: v[0] for k, v in recipe.choices.items()})
    for role in recipe.roles:
        text = role.name
        if role.name in bound:
            text = f"{bound[role.name]}.to({like.role}.dtype)" if role.name in recipe.same_dtype else bound[role.name]
        elif role.name in recipe.same_dtype and by_role[role.name].dtype != like.dtype:
            text = f"{role.name}.to({like.role}.dtype)"
        fields[role.name] = text
    for rule in recipe.constants:
        fields[rule.name] = f"_{rule.name}"
    expr = recipe.call.format(**fields)
    if recipe.cast_output:
        expr = f"{expr}.to({'dtype' if chain.output_dtype == chain.model_dtype else chain.output_dtype})"
    elif chain.output_dtype != like.dtype:
        target = "dtype" if chain.output_dtype == chain.model_dtype else chain.output_dtype
        expr = f"{expr}.to({target})"
    if tuple(like.shape) != tuple(chain.output_shape):
        raise ChainError(f"the fused op returns {recipe.output_like}'s shape {list(like.shape)}, the chain returns "
                         f"{list(chain.output_shape)}")
    return expr


def replacement_prelude(chain: Chain, bound: Mapping[str, str] | None) -> list[str]:
    """The search function's own lines that compute the bound variables from their roles, in order."""
    import ast

    if not bound:
        return []
    reads = {op.var: {n.id for n in ast.walk(ast.parse(op.code)) if isinstance(n, ast.Name)} for op in chain.ops}
    wanted, stack = set(), list(bound.values())
    while stack:
        var = stack.pop()
        if var in reads and var not in wanted:
            wanted.add(var)
            stack.extend(reads[var])
    return [f"{op.var} = {op.code}" for op in chain.ops if op.var in wanted]


def output_cast(chain: Chain, recipe: Recipe) -> str | None:
    """The dtype the graph pass casts the fused result to (None: it already has the chain's output dtype)."""
    like = next(i for i in chain.inputs if i.role == recipe.output_like)
    return chain.output_dtype if chain.output_dtype != like.dtype else None


def weight_casts(chain: Chain, recipe: Recipe) -> dict[str, str]:
    """role -> dtype it is cast to before the fused op (same_dtype roles whose graph dtype differs)."""
    by_role = {i.role: i for i in chain.inputs}
    like = by_role[recipe.output_like]
    return {r: like.dtype for r in recipe.same_dtype if by_role[r].dtype != like.dtype}
