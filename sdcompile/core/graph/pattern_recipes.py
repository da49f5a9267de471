"""The replacement recipes (each op's [recipe.<form>] in catalogs/ops/<op>.toml), and the replacement expression and
casts each writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.nodes import target_name
from sdcompile.core.graph.pattern_chain import Chain, ChainError, is_literal
from sdcompile.core.graph.pattern_layout import adapted_roles, back_text, call_layout, lifted_roles, role_text
from sdcompile.core.ops import OPS, op_table, op_tables


@dataclass(frozen=True)
class Role:
    name: str  # the search function's parameter ("x", "weight")
    rank: int | None = None  # required rank, when the role has one (a norm weight is 1-D)
    last_dim_of: str | None = None  # its size equals the last dim of that role (weight [D] of x [..., D])
    description: str = ""
    through: str | None = None  # it flows into a node of this op inside the chain (AdaLN's scale: the multiply)
    meets: str | None = None  # it multiplies a value computed through this op (RoPE's sin: the rotated half)
    bind_at: str | None = None  # the fused op takes it as it enters this op (RoPE's tables, once broadcast)
    arg_of: tuple[str, int] | None = None  # it reaches this argument of an op (a LayerNorm's x: 0, its weight: 2)
    added_to: str | None = None  # it is added to a value computed through this op (AdaLN's shift)
    optional: bool = False  # a chain may lack it (a LayerNorm without affine has no weight)
    absent: str | None = None  # what the fused call takes when the chain lacks it ("None", "torch.zeros_like({scale})")
    absent_node: tuple[str, str] | None = None  # the same as a graph pass inserts it: (op, role it is applied to)
    trailing: tuple[int, ...] | None = None  # its last dims (rotation matrices: 2, 2)
    # it reaches argument k of that op and none of its other arguments (a strided RoPE's sin: the subtracted
    # product only; x reaches both)
    only_in_arg: tuple[str, int] | None = None
    read: bool = True  # the fused op reads it (False: a buffer the chain overwrites whole, bound only to match)
    # it is not computed by these ops (through casts and views): the chain after them is another form's (AdaLN's
    # modulation after a LayerNorm is mindiesd::adaln's, not scale_shift's)
    not_from: tuple[str, ...] = ()


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
    role_kwargs: tuple[tuple[str, str], ...] = ()  # (keyword, role): optional roles, None when a chain lacks them
    shapes: Mapping[str, tuple[tuple[int | str, ...], ...]] = field(default_factory=dict)  # role -> shapes the op takes
    # keyword -> literals the op takes for a mode the chain does not spell (RoPE's rotation), tried in order by the
    # numerics gate
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # roles the op takes at the rank of the recipe's output_like: a lower-rank one (tables broadcast against x) gets
    # leading size-1 dims, as broadcasting reads it (npu_rotary_mul takes 4-D tables only)
    at_rank: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lift:
    """A lower-rank chain the fused op serves once `roles` get a size-1 axis at `dim` (taken off the result)."""

    from_rank: int
    dim: int
    roles: tuple[str, ...]


@dataclass(frozen=True)
class Partial:
    """A chain that rotates only the leading channels of `role` (its tables narrower than it: MiniMax-H3): the fused
    call takes those channels and the rest pass through, concatenated back after it."""

    role: str  # "x"
    tables: tuple[str, ...]  # the roles as wide as the channels the op takes (the first is measured): cos, sin


@dataclass(frozen=True)
class Recipe:
    op: str  # the op it serves: "rmsnorm", "rope"
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
    setup: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (line, roles it needs): replacement lines before the call
    lift: Lift | None = None
    form: str = ""  # the catalog key: the op itself, or one of its forms ("rope_complex")
    graph_pass: bool = True  # a graph pass can insert graph_call (False: its inputs are not values the chain holds)
    partial: Partial | None = None
    other_starts: Mapping[str, str] = field(default_factory=dict)  # op -> what it is, when a site starts there instead
    other_starts_way_out: str = ""  # what to do about such a site (the refusal names it)
    # (op, literal): the start node is a starts_at node one of whose operands is that op with that literal among its
    # arguments (the multiply by `1 + scale`); None: any starts_at node
    start_operand: tuple[str, float] | None = None
    flat_roles: tuple[str, ...] = ()  # roles the fused op reads element for element with output_like (scale_shift)
    # the layouts (pattern_layout) the replacement's own call takes as they are: no view is written for them there
    call_takes: tuple[str, ...] = ()
    # (op, literal): a node computing an input as op(input, literal) for the chain alone joins it (AdaLN's 1 + scale,
    # computed a line before the modulation)
    absorbs: tuple[str, float] | None = None
    # the chain ends at its last node of these ops and the casts right after it (AdaLN's last add or multiply: the
    # projection a site applies to the modulated value stays in the graph); () : at the site's output
    ends: tuple[str, ...] = ()

    @property
    def start_text(self) -> str:
        """Where the chain starts, in words: "aten.native_layer_norm.default"."""
        if self.start_operand is None:
            return str(self.starts_at)
        op, literal = self.start_operand
        return f"{self.starts_at} by {op}(..., {literal:g})"

    def is_start(self, node) -> bool:
        """Whether `node` is where this recipe's chain begins (its starts_at op, with its start_operand)."""
        if getattr(node, "op", None) != "call_function" or target_name(node.target) != self.starts_at:
            return False
        if self.start_operand is None:
            return True
        op, literal = self.start_operand
        return any(a.op == "call_function" and target_name(a.target) == op
                   and any(is_literal(v, literal) for v in a.args)
                   for a in node.all_input_nodes)

    def fits(self, targets) -> bool:
        """Whether a site whose nodes have these op names holds this recipe's chain at all (its chain_ops)."""
        present = set(targets)
        return all(op in present for op in self.chain_ops)

    def lifted(self, chain: Chain) -> bool:
        """Whether this chain's output_like role has the lift's lower rank (checked against every lifted role)."""
        if self.lift is None:
            return False
        by_role = {i.role: i for i in chain.inputs}
        if len(by_role[self.output_like].shape) != self.lift.from_rank:
            return False
        odd = [r for r in self.lift.roles if r in by_role and len(by_role[r].shape) != self.lift.from_rank]
        if odd:
            raise ChainError(f"{self.output_like} is {self.lift.from_rank}-D but {', '.join(odd)} is not: the "
                             f"{self.title} replacement lifts them together")
        return True

    def rotates_part(self, chain: Chain) -> bool:
        """Whether the chain's tables are narrower than the role they act on (the partial rotation, when the recipe
        has one)."""
        if self.partial is None:
            return False
        by_role = {i.role: i for i in chain.inputs}
        full, table = by_role[self.partial.role].shape, by_role[self.partial.tables[0]].shape
        return bool(full) and bool(table) and table[-1] < full[-1]

    def role(self, name: str) -> Role:
        return next(r for r in self.roles if r.name == name)

    @property
    def setup_names(self) -> tuple[str, ...]:
        """The names the setup lines assign (kept out of the search function's variable names)."""
        return tuple(line.split("=", 1)[0].strip() for line, _needs in self.setup if "=" in line.split("(", 1)[0])


def combinations(choices: Mapping[str, tuple[str, ...]]) -> list[dict[str, str]]:
    """Every combination of a recipe's choices (its call's or its graph call's), in the catalog's order ([{}] when
    there are none)."""
    import itertools

    keys = list(choices)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(choices[k] for k in keys))]


def load_recipes() -> dict[str, Recipe]:
    """Every op's replacement recipes, by catalog key (the op's own, or one of its forms: `rope_complex`)."""
    recipes = {}
    for op, entry in op_tables().items():
        recipes |= {key: _recipe(op, key, table) for key, table in entry.get("recipe", {}).items()}
    return recipes


def _recipe(op: str, key: str, table: dict) -> Recipe:
    return Recipe(
        op=op,
        form=key,
        graph_pass=bool(table.get("graph_pass", True)),
        title=table["title"],
        fused_op=table["fused_op"],
        imports=tuple(table.get("imports", ())),
        call=table["call"],
        graph_call=_graph_call(table["graph_call"]),
        output_like=table["output_like"],
        same_dtype=tuple(table.get("same_dtype", ())),
        roles=tuple(_role(r) for r in table["roles"]),
        constants=tuple(ConstantRule(name, tuple(c["ops"]), c.get("user"), c["arg"])
                        for name, c in table.get("constants", {}).items()),
        chain_ops=tuple(table.get("chain_ops", ())),
        starts_at=table.get("starts_at"),
        requires={node_op: dict(kw) for node_op, kw in table.get("requires", {}).items()},
        approximation=float(table.get("approximation", 0.0)),
        note=table.get("note", ""),
        choices={k: tuple(v) for k, v in table.get("choices", {}).items()},
        cast_output=bool(table.get("cast_output", False)),
        setup=tuple((line["code"], tuple(line.get("needs", ()))) for line in table.get("setup", ())),
        lift=Lift(int(table["lift"]["from_rank"]), int(table["lift"]["dim"]), tuple(table["lift"]["roles"]))
        if "lift" in table else None,
        partial=Partial(table["partial"]["role"], tuple(table["partial"]["tables"]))
        if "partial" in table else None,
        other_starts=dict(table.get("other_starts", {})),
        other_starts_way_out=table.get("other_starts_way_out", ""),
        start_operand=(str(table["start_operand"][0]), float(table["start_operand"][1]))
        if "start_operand" in table else None,
        flat_roles=tuple(table.get("flat_roles", ())),
        call_takes=tuple(table.get("call_takes", ())),
        absorbs=(str(table["absorbs"][0]), float(table["absorbs"][1])) if "absorbs" in table else None,
        ends=tuple(table.get("ends", ())),
    )


def recipes_for(op: str) -> list[Recipe]:
    """Every recipe serving `op`, in catalog order (the op's own first)."""
    recipes = op_table(op).get("recipe", {}) if op in OPS else {}
    return [_recipe(op, key, table) for key, table in recipes.items()]


def recipe_for_sites(site_targets, candidates: list[Recipe]) -> Recipe | None:
    """The recipe of `candidates` (one op's, in catalog order) whose chain the most sites hold (`site_targets`: each
    site's op names); the catalog's first on a tie, and when no site holds any (its refusal then says what the chain
    lacks)."""
    if not candidates:
        return None
    sites = [tuple(t) for t in site_targets]
    return max(candidates, key=lambda r: (sum(r.fits(t) for t in sites), -candidates.index(r)))


def _graph_call(gc: Mapping[str, Any]) -> GraphCall:
    shapes = {role: tuple(tuple(spec) for spec in specs) for role, specs in gc.get("shapes", {}).items()}
    return GraphCall(gc["op"], tuple(gc["args"]), tuple(gc.get("kwargs", {}).items()), gc.get("output"),
                     tuple(gc.get("role_kwargs", {}).items()), shapes,
                     {k: tuple(v) for k, v in gc.get("choices", {}).items()}, tuple(gc.get("at_rank", ())))


def _role(table: Mapping[str, Any]) -> Role:
    arg_of = table.get("arg_of")
    return Role(table["name"], table.get("rank"), table.get("last_dim_of"), table.get("description", ""),
                table.get("through"), table.get("meets"), table.get("bind_at"),
                _op_arg(arg_of), table.get("added_to"),
                bool(table.get("optional", False)), table.get("absent"),
                (str(table["absent_node"][0]), str(table["absent_node"][1])) if "absent_node" in table else None,
                tuple(int(d) for d in table["trailing"]) if "trailing" in table else None,
                _op_arg(table.get("only_in_arg")), bool(table.get("read", True)),
                tuple(table.get("not_from", ())))


def _op_arg(pair) -> tuple[str, int] | None:
    return (str(pair[0]), int(pair[1])) if pair else None


# ------------------------------------------------------------------------------------------- replacement
def _call_fields(recipe: Recipe, chain: Chain, bound: Mapping[str, str] | None,
                 choice: Mapping[str, str] | None) -> dict[str, str]:
    """What fills the recipe's {role}, {constant} and {choice} fields for this chain."""
    by_role = {i.role: i for i in chain.inputs}
    like = by_role[recipe.output_like]
    bound = bound or {}
    fields = dict(choice or {k: v[0] for k, v in recipe.choices.items()})
    for role in (r for r in recipe.roles if r.name in by_role):
        text = role.name
        if role.name in bound:
            text = f"{bound[role.name]}.to({like.role}.dtype)" if role.name in recipe.same_dtype else bound[role.name]
        elif role.name in recipe.same_dtype and by_role[role.name].dtype != like.dtype:
            text = f"{role.name}.to({like.role}.dtype)"
        fields[role.name] = text
    for rule in recipe.constants:
        fields[rule.name] = f"_{rule.name}"
    for name in lifted_roles(recipe, chain):
        fields[name] = f"{fields[name]}.unsqueeze({recipe.lift.dim})"
    adapted = call_layout(recipe, chain)
    for name in adapted_roles(recipe, chain) if adapted is not None else ():
        if name in by_role:  # x [S, B, D], [B, T, H, W, D] or per token: as the op takes it (pattern_layout)
            fields[name] = role_text(adapted, name, fields[name])
    if recipe.rotates_part(chain):
        if recipe.lifted(chain):
            raise ChainError(f"{recipe.output_like} has its heads folded into its channels and its tables are "
                             "narrower: which channels of each head rotate is not in the chain's shapes")
        part = recipe.partial
        fields[part.role] = f"{fields[part.role]}[..., :{_width(fields, part)}]"
    for role in (r for r in recipe.roles if r.name not in by_role):
        if role.absent is None:
            raise ChainError(f"the chain has no {role.name}, and the {recipe.title} replacement needs one")
        fields[role.name] = role.absent.format(**fields)
    return fields


def replacement_expr(recipe: Recipe, chain: Chain, bound: Mapping[str, str] | None = None,
                     choice: Mapping[str, str] | None = None) -> str:
    """The replacement's return expression: the recipe's fused call, with the casts the chain's dtypes need.
    `bound` (role -> chain variable): roles the fused op takes as a value the chain computes from them first
    (a zero-centred norm's `weight + 1`, RoPE tables once broadcast), recomputed by replacement_prelude; a
    same_dtype role is cast to output_like's dtype. `choice`: the literal for each of the recipe's choices. A role
    the chain lacks (an optional one) is the recipe's `absent` value."""
    like = next(i for i in chain.inputs if i.role == recipe.output_like)
    fields = _call_fields(recipe, chain, bound, choice)
    expr = recipe.call.format(**fields)
    if recipe.lifted(chain):
        expr = f"{expr}.squeeze({recipe.lift.dim})"
    adapted = call_layout(recipe, chain)
    if adapted is not None:  # given back in the chain's own layout
        expr = back_text(adapted, expr, like.role)
    target = "dtype" if chain.output_dtype == chain.model_dtype else chain.output_dtype
    if recipe.cast_output or chain.output_dtype != like.dtype:
        expr = f"{expr}.to({target})"
    if recipe.rotates_part(chain):  # the channels past the tables' width, as the chain passes them through
        part = recipe.partial
        rest = f"{part.role}[..., {_width(fields, part)}:]"
        rest = f"{rest}.to({target})" if chain.output_dtype != like.dtype else rest
        expr = f"torch.cat([{expr}, {rest}], dim=-1)"
    if tuple(like.shape) != tuple(chain.output_shape):
        raise ChainError(f"the fused op returns {recipe.output_like}'s shape {list(like.shape)}, the chain returns "
                         f"{list(chain.output_shape)}")
    return expr


def _width(fields: Mapping[str, str], part: Partial) -> str:
    """How many leading channels a partial rotation's fused call takes: its first table's last dim."""
    return f"{fields[part.tables[0]]}.shape[-1]"


def replacement_setup(recipe: Recipe, chain: Chain, bound: Mapping[str, str] | None = None) -> list[str]:
    """The recipe's setup lines for this chain (those whose roles it has), fields filled: what the fused call
    needs built first (AdaLN's LayerNorm module, which layernorm_scale_shift reads eps, weight and bias from)."""
    present = {i.role for i in chain.inputs}
    fields = _call_fields(recipe, chain, bound, None)
    return [line.format(**fields) for line, needs in recipe.setup if not needs or present & set(needs)]


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
    return {r: like.dtype for r in recipe.same_dtype if r in by_role and by_role[r].dtype != like.dtype}


def absent_nodes(recipe: Recipe, chain: Chain) -> list[tuple[str, str, str]]:
    """(role, op, role it is applied to) for each positional graph-call argument the chain lacks: the node a graph
    pass inserts in its place (AdaLN's missing shift: aten.zeros_like of scale)."""
    present = {i.role for i in chain.inputs}
    return [(r, *recipe.role(r).absent_node) for r in recipe.graph_call.args
            if r not in present and r not in recipe.setup_names and recipe.role(r).absent_node is not None]


def materialised_roles(recipe: Recipe, chain: Chain) -> tuple[str, ...]:
    """The flat roles the replacement must expand to output_like's size (broadcast in the chain) or create (absent):
    on the NPU each costs a tensor of that size written before the fused kernel reads it."""
    import math

    by_role = {i.role: i for i in chain.inputs}
    size = math.prod(by_role[recipe.output_like].shape)
    return tuple(r for r in recipe.flat_roles if r not in by_role or math.prod(by_role[r].shape) != size)
