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
    chain_table(chain)       the chain as a graph pass's matching table (path B)
"""

from __future__ import annotations

import itertools
import keyword
import math
import operator
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.nodes import frames, short_path


class ChainError(ValueError):
    """The subgraph cannot be written as one pattern (several outputs, an unknown op, an input no role fits).
    `graph_pass_can`: a custom graph pass, matching the graph's own nodes, can still replace it."""

    def __init__(self, message: str, graph_pass_can: bool = False):
        super().__init__(message)
        self.graph_pass_can = graph_pass_can


# --------------------------------------------------------------------------------------------- the recipe
@dataclass(frozen=True)
class Role:
    name: str  # the search function's parameter ("x", "weight")
    rank: int | None = None  # required rank, when the role has one (a norm weight is 1-D)
    last_dim_of: str | None = None  # its size equals the last dim of that role (weight [D] of x [..., D])
    description: str = ""
    through: str | None = None  # it flows into a node of this op inside the chain (AdaLN's scale: the multiply)


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
                             r.get("through")) for r in table["roles"]),
            constants=tuple(ConstantRule(name, tuple(c["ops"]), c.get("user"), c["arg"])
                            for name, c in table.get("constants", {}).items()),
            chain_ops=tuple(table.get("chain_ops", ())),
            starts_at=table.get("starts_at"),
            requires={op: dict(kw) for op, kw in table.get("requires", {}).items()},
            approximation=float(table.get("approximation", 0.0)),
            note=table.get("note", ""),
        )
    return recipes


# ---------------------------------------------------------------------------------------------- the chain
@dataclass(frozen=True)
class ChainInput:
    role: str  # the parameter name in generated code
    node: str  # the graph node feeding the chain
    holder: str  # "placeholder" | "get_attr" | "computed"
    origin: str  # "parameter transformer_blocks.0.attn.norm_q.weight", "computed (aten.view...)"
    shape: tuple[int, ...]
    dtype: str  # "torch.bfloat16"
    dtype_expr: str  # "dtype" when it is the model dtype, else "torch.float32"


@dataclass(frozen=True)
class ChainOp:
    var: str  # its variable in the generated search function
    node: str  # the graph node it mirrors
    target: str  # "aten.pow.Tensor_Scalar"
    code: str  # "torch.ops.aten.pow.Tensor_Scalar(to_copy, 2)"
    table_args: str  # the same call as a chain-table entry (path B): "(_Node(0), 2), {}"
    source: str  # "diffusers/models/normalization.py:555 in forward: variance = ..."


@dataclass(frozen=True)
class Constant:
    name: str  # "epsilon"
    graph_value: float  # exactly as the graph holds it: 9.999999974752427e-07
    spelled: str  # the factory's argument: "1e-06"
    fp32_rounded: bool  # the graph holds float32(spelled), so the factory rounds like the model did
    node: str  # the node holding it ("add_22")
    target: str  # its op ("aten.add.Scalar")


@dataclass(frozen=True)
class Chain:
    inputs: tuple[ChainInput, ...]
    ops: tuple[ChainOp, ...]
    output: str  # the output node's name
    output_var: str
    output_shape: tuple[int, ...]
    output_dtype: str
    constants: tuple[Constant, ...]
    model_dtype: str  # "torch.bfloat16"
    signature: tuple = field(repr=False)  # hashable; equal for sites one pattern serves

    @property
    def search_body(self) -> list[str]:
        return [f"{op.var} = {op.code}" for op in self.ops] + [f"return {self.output_var}"]

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(op.target for op in self.ops)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(op.node for op in self.ops)

    def constant(self, name: str) -> Constant:
        return next(c for c in self.constants if c.name == name)


def op_target_name(target: Any) -> str:
    """`aten.pow.Tensor_Scalar` for an OpOverload; `getitem` for operator.getitem."""
    if target is operator.getitem:
        return "getitem"
    if hasattr(target, "overloadpacket"):
        return str(target)
    raise ChainError(f"{getattr(target, '__name__', target)!r} is not an ATen op overload; a pattern can only "
                     "mirror torch.ops.* calls")


def torch_ops_expr(target_name: str) -> str:
    """`aten.pow.Tensor_Scalar` -> `torch.ops.aten.pow.Tensor_Scalar`."""
    return f"torch.ops.{target_name}"


# ---------------------------------------------------------------------------------------------- constants
def _round_fp32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def spell_constant(value: float) -> tuple[str, bool]:
    """The shortest decimal a factory argument can carry for a graph constant, and whether the graph holds it
    rounded to float32 (torch.rms_norm stores eps as float32: 1e-6 appears as 9.999999974752427e-07)."""
    if not math.isfinite(value):
        raise ChainError(f"constant {value!r} is not finite")
    if float(f"{value:.6g}") == value:
        return repr(value), False  # a short Python float held as is (diffusers RMSNorm: `variance + self.eps`)
    if _round_fp32(value) == value:
        for digits in range(1, 10):
            text = f"{value:.{digits}g}"
            if _round_fp32(float(text)) == value and float(text) != value:
                return repr(float(text)), True
    return repr(value), False


# ---------------------------------------------------------------------------------------------- extraction
_BUILTIN_NAMES = {"pow", "abs", "sum", "min", "max", "round", "slice", "type", "input", "id", "all", "any"}


class _Names:
    def __init__(self, reserved: set[str]):
        self.used = set(reserved)

    def take(self, base: str) -> str:
        base = re.sub(r"\W+", "_", base).strip("_") or "v"
        if base[0].isdigit():
            base = f"v_{base}"
        if base in _BUILTIN_NAMES or keyword.iskeyword(base):
            base = f"{base}_"
        for i in itertools.count():
            name = base if i == 0 else f"{base.rstrip('_')}_{i}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise AssertionError("unreachable")


def _val(node) -> Any:
    return node.meta.get("val")


def _shape(node) -> tuple[int, ...]:
    val = _val(node)
    if val is None or not hasattr(val, "shape"):
        raise ChainError(f"node {node.name} carries no tensor metadata (meta['val'])")
    return tuple(int(d) for d in val.shape)


def _dtype(node) -> str:
    return str(_val(node).dtype)


def _source(node) -> str:
    fs = frames(node)
    if not fs:
        return ""
    f = fs[-1]
    return f"{short_path(f.file)}:{f.line} in {f.function}: {f.code}"


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
        if ok:
            fits.append(binding)
    if len(fits) != 1:
        why = "no assignment fits" if not fits else f"{len(fits)} assignments fit"
        raise ChainError(f"cannot tell which input is which ({why}): roles "
                         + "; ".join(f"{r.name}: {r.description}" for r in recipe.roles))
    return fits[0]


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
    import torch

    if not nodes:
        raise ChainError("the site has no nodes in this graph")
    members = _from_start(list(nodes), recipe)
    member_set = set(members)
    for node in members:
        if node.op != "call_function":
            raise ChainError(f"node {node.name} is a {node.op}, not an op call")
        op_target_name(node.target)  # raises for non-ATen targets

    outputs = [n for n in members if any(u not in member_set for u in n.users)]
    if len(outputs) != 1:
        detail = ", ".join(f"{n.name} (used by {', '.join(u.name for u in n.users if u not in member_set)})"
                           for n in outputs)
        raise ChainError(f"the subgraph has {len(outputs)} values used outside it ({detail or 'none'}): a "
                         "replacement can stand for exactly one (mismatch type 5 when an inner value escapes)")
    out = outputs[0]
    reachable = _ancestors(out, member_set)
    stray = [n.name for n in members if n not in reachable]
    if stray:
        raise ChainError(f"nodes {', '.join(stray)} do not lead to the output {out.name}")
    missing = [op for op in recipe.chain_ops if op not in {op_target_name(n.target) for n in members}]
    if missing:
        raise ChainError(f"the subgraph has no {', '.join(missing)}: not the {recipe.title} chain the "
                         f"replacement stands for")

    _check_required(members, recipe)

    inputs: list = []
    for node in members:
        for arg in node.all_input_nodes:
            if arg not in member_set and arg not in inputs:
                inputs.append(arg)
    binding = _bind_roles(recipe, inputs, member_set)
    role_of = {node: role for role, node in binding.items()}
    ordered_inputs = [binding[r.name] for r in recipe.roles]
    constants_at = _find_constants(recipe, members)

    dtype_name = str(model_dtype)
    reserved = {r.name for r in recipe.roles} | {"torch", "dtype", "func"} | {f"_{c.name}" for c in recipe.constants}
    names = _Names(reserved)
    var_of: dict[Any, str] = {}
    device_owner = next((n for n in ordered_inputs if _val(n) is not None and hasattr(_val(n), "device")), None)

    def render(arg, where: tuple[str, int] | None = None) -> tuple[str, str, Any]:
        """(python expression, chain-table expression, signature form) of one argument."""
        if isinstance(arg, torch.fx.Node):
            if arg in var_of:
                index = members.index(arg)
                return var_of[arg], f"_Node({index})", ("node", index)
            role = role_of[arg]
            return role, f"_In({recipe.roles.index(next(r for r in recipe.roles if r.name == role))})", ("in", role)
        if where is not None and where in constants_at:
            rule = constants_at[where]
            return f"_{rule.name}", f"_{rule.name}", ("const", rule.name)
        if isinstance(arg, bool) or arg is None or isinstance(arg, (int, str)):
            return repr(arg), repr(arg), ("lit", repr(arg))
        if isinstance(arg, float):
            text = repr(arg) if math.isfinite(arg) else f'float("{arg}")'
            return text, text, ("lit", text)
        if isinstance(arg, torch.dtype):
            if str(arg) == dtype_name:
                return "dtype", "dtype", ("dtype", "model")
            return str(arg), str(arg), ("lit", str(arg))
        if isinstance(arg, (torch.layout, torch.memory_format)):
            return str(arg), str(arg), ("lit", str(arg))
        if isinstance(arg, torch.device):
            if device_owner is None or str(_val(device_owner).device) != str(arg):
                raise ChainError(f"device {arg} in the graph is not the device of the chain's inputs")
            return f"{role_of[device_owner]}.device", "_ANY", ("device",)
        if isinstance(arg, (list, tuple)):
            parts = [render(a) for a in arg]
            py = ", ".join(p[0] for p in parts)
            table = ", ".join(p[1] for p in parts)
            if isinstance(arg, tuple):
                py, table = (f"({py},)", f"({table},)") if len(parts) == 1 else (f"({py})", f"({table})")
            else:
                py, table = f"[{py}]", f"[{table}]"
            return py, table, (type(arg).__name__, tuple(p[2] for p in parts))
        raise ChainError(f"cannot write the literal {arg!r} ({type(arg).__name__}) into a pattern")

    ops: list[ChainOp] = []
    signature_ops = []
    for node in members:
        target = op_target_name(node.target)
        base = "getitem" if target == "getitem" else target.split(".")[1]
        var = names.take(base)
        args = [render(a, (node.name, i)) for i, a in enumerate(node.args)]
        kwargs = [(k, render(v, (node.name, k))) for k, v in node.kwargs.items()]
        if target == "getitem":
            code = f"{args[0][0]}[{args[1][0]}]"
        else:
            parts = [a[0] for a in args] + [f"{k}={v[0]}" for k, v in kwargs]
            code = f"{torch_ops_expr(target)}({', '.join(parts)})"
        table_items = [a[1] for a in args]
        table_tuple = f"({table_items[0]},)" if len(table_items) == 1 else f"({', '.join(table_items)})"
        table_args = table_tuple + ", {" + ", ".join(f"{k!r}: {v[1]}" for k, v in kwargs) + "}"
        var_of[node] = var
        ops.append(ChainOp(var, node.name, target, code, table_args, _source(node)))
        signature_ops.append((target, tuple(a[2] for a in args), tuple((k, v[2]) for k, v in kwargs)))

    chain_inputs = []
    for role in recipe.roles:
        node = binding[role.name]
        dtype = _dtype(node)
        holder = node.op if node.op in ("placeholder", "get_attr") else "computed"
        chain_inputs.append(ChainInput(
            role=role.name, node=node.name, holder=holder,
            origin=(origins or {}).get(node.name, holder), shape=_shape(node), dtype=dtype,
            dtype_expr="dtype" if dtype == dtype_name else dtype,
        ))

    constants = []
    for (node_name, index), rule in constants_at.items():
        node = next(n for n in members if n.name == node_name)
        value = float(node.args[index])
        spelled, rounded = spell_constant(value)
        constants.append(Constant(rule.name, value, spelled, rounded, node_name, op_target_name(node.target)))
    constants.sort(key=lambda c: [r.name for r in recipe.constants].index(c.name))

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
        inputs=tuple(chain_inputs), ops=tuple(ops), output=out.name, output_var=var_of[out],
        output_shape=_shape(out), output_dtype=out_dtype, constants=tuple(constants), model_dtype=dtype_name,
        signature=signature,
    )


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


# ------------------------------------------------------------------------------------------- replacement
def replacement_expr(recipe: Recipe, chain: Chain) -> str:
    """The replacement's return expression: the recipe's fused call, with the casts the chain's dtypes need."""
    by_role = {i.role: i for i in chain.inputs}
    like = by_role[recipe.output_like]
    fields = {}
    for role in recipe.roles:
        text = role.name
        if role.name in recipe.same_dtype and by_role[role.name].dtype != like.dtype:
            text = f"{role.name}.to({like.role}.dtype)"
        fields[role.name] = text
    for rule in recipe.constants:
        fields[rule.name] = f"_{rule.name}"
    expr = recipe.call.format(**fields)
    if chain.output_dtype != like.dtype:
        target = "dtype" if chain.output_dtype == chain.model_dtype else chain.output_dtype
        expr = f"{expr}.to({target})"
    if tuple(like.shape) != tuple(chain.output_shape):
        raise ChainError(f"the fused op returns {recipe.output_like}'s shape {list(like.shape)}, the chain returns "
                         f"{list(chain.output_shape)}")
    return expr


def output_cast(chain: Chain, recipe: Recipe) -> str | None:
    """The dtype the graph pass casts the fused result to (None: it already has the chain's output dtype)."""
    like = next(i for i in chain.inputs if i.role == recipe.output_like)
    return chain.output_dtype if chain.output_dtype != like.dtype else None


def weight_casts(chain: Chain, recipe: Recipe) -> dict[str, str]:
    """role -> dtype it is cast to before the fused op (same_dtype roles whose graph dtype differs)."""
    by_role = {i.role: i for i in chain.inputs}
    like = by_role[recipe.output_like]
    return {r: like.dtype for r in recipe.same_dtype if by_role[r].dtype != like.dtype}


__all__ = [
    "Chain", "ChainError", "ChainInput", "ChainOp", "Constant", "ConstantRule", "GraphCall", "Recipe", "Role",
    "extract_chain", "load_recipes", "op_target_name", "output_cast", "replacement_expr", "spell_constant",
    "torch_ops_expr", "weight_casts",
]
