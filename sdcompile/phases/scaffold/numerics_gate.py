"""The numerics gate: before anything is written, each generated replacement runs against its own search function
(the site's subgraph, written from the graph) on random inputs — weights too, so a dropped `+ 1` or a swapped role
cannot pass by symmetry — with the per-dtype tolerances verify uses.

A chain that transforms a role input before the fused op's point (`weight + 1`, `1 + scale`, a cast) makes the
raw binding wrong. The gate then looks for the transform by values (testing.input_transforms): a value computed
from that input alone which, bound in its place, makes the replacement agree. Path A rebinds the role to it (the
replacement recomputes it from the input first, with the search function's own lines) and checks again; a variant
no binding fixes is refused with what differs. A graph pass (path B) is refused in that case: it would have to keep
the transform's nodes alive in the graph, which the generated pass does not do.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from sdcompile.core.graph.pattern_chain import laid_out
from sdcompile.core.graph.pattern_graph_call import graph_setup, partial_width
from sdcompile.core.graph.pattern_layout import adapted_layout, adapted_roles, back_tensor, lifted_roles, role_tensor
from sdcompile.core.graph.pattern_recipes import absent_nodes, output_cast, weight_casts
from sdcompile.core.npu.emulation.tree_ops import tree_fallback
from sdcompile.core.target.failures import describe_error
from sdcompile.core.zoo.models import torch_dtype
from sdcompile.testing.data_movement import Movement, measure
from sdcompile.testing.input_transforms import InputTransform, ValueNode, find_input_transform, ignored_inputs
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE, Numerics, compare, example_inputs, shrunk_shapes


@dataclass(frozen=True)
class GateRun:
    variant: str  # pattern class / chain name
    dtype: str  # "bf16"
    numerics: Numerics | None  # the replacement against the search function (None: it raised)
    transform: InputTransform | None  # when it failed: the input transform that explains it
    ignored: tuple[tuple[str, str], ...]  # (input, side) one side does not read
    error: str | None = None
    chain_moved: Movement | None = None  # what the search function moved on the gate's inputs
    replacement_moved: Movement | None = None  # ...and what the replacement moved

    @property
    def passed(self) -> bool:
        return self.error is None and self.numerics is not None and self.numerics.passed


def chain_values(chain, inputs: dict, dtype) -> list[ValueNode]:
    """Every value of the chain's search body on `inputs` (role -> tensor), executed line by line with the
    factory's own names: `dtype` and each constant exactly as the graph holds it. A fused op of the tree already in
    the chain (a generic group left it there) computes its meaning, the tree's torch fallback: the chain is the
    reference a replacement is judged against, not an NPU run."""
    import torch

    names = {i.role for i in chain.inputs}
    namespace = {"torch": torch, "dtype": dtype, **{f"_{c.name}": c.graph_value for c in chain.constants}, **inputs}
    nodes, known = [], set(names)
    for op in chain.ops:
        with tree_fallback():
            exec(f"{op.var} = {op.code}", namespace)  # noqa: S102 - the chain's own generated lines
        reads = tuple(dict.fromkeys(n.id for n in ast.walk(ast.parse(op.code)) if isinstance(n, ast.Name)
                                    and n.id in known))
        known.add(op.var)
        nodes.append(ValueNode(op.var, op.code.removeprefix("torch.ops."), reads, namespace[op.var]))
    return nodes


def _judge(inputs, approximation: float):
    return lambda got, expected: compare(got, expected, DEFAULT_MIN_COSINE, inputs, approximation)


def gate_pattern_class(variant, cls, chain, dtype: str, device) -> GateRun:
    """A generated pattern class's replacement against its search function, on its own example inputs."""
    import torch

    try:
        inputs, _specs = example_inputs(cls)
        inputs = [t.to(device.tensor_device) if isinstance(t, torch.Tensor) else t for t in inputs]
        with torch.no_grad():
            expected, chain_moved = measure(cls.pattern, *inputs)
            got, replacement_moved = measure(cls.replacement, *inputs)
            judge = _judge(inputs, variant.recipe.approximation)
            numerics = judge(got, expected)
            if numerics.passed:
                return GateRun(variant.name, dtype, numerics, None, (), None, chain_moved, replacement_moved)
            roles = [i.role for i in chain.inputs]
            nodes = chain_values(chain, dict(zip(roles, inputs, strict=True)), torch_dtype(dtype))
            transform = find_input_transform(nodes, roles, inputs, cls.replacement, expected, judge)
            ignored = () if transform else ignored_inputs(cls.pattern, cls.replacement, inputs, roles)
    except Exception as exc:  # noqa: BLE001 - a replacement that cannot run is the gate's finding
        return GateRun(variant.name, dtype, None, None, (), describe_error(exc))
    return GateRun(variant.name, dtype, numerics, transform, ignored)


def gate_graph_call(variant, chain, dtype: str, device) -> GateRun:
    """A graph-pass chain: the fused call the pass inserts (its casts included) against the chain's own lines."""
    import torch

    recipe = variant.recipe
    lifted = lifted_roles(recipe, chain)
    adapted, adapted_names = adapted_layout(recipe, chain), adapted_roles(recipe, chain)  # as the pass views them
    width = partial_width(recipe, chain)
    model_dtype = torch_dtype(dtype)
    gen = torch.Generator().manual_seed(0)
    roles = [i.role for i in chain.inputs]
    shapes = shrunk_shapes([tuple(i.shape) for i in chain.inputs])  # broadcasting kept: they shrink together
    # laid out in memory as the graph's values are (a transposed view stays one)
    inputs = [laid_out(torch.randn, shape, i.dim_order, generator=gen).to(recorded_dtype(i.dtype))
              .to(device.tensor_device) for i, shape in zip(chain.inputs, shapes, strict=True)]
    by_role = dict(zip(roles, inputs, strict=True))
    casts, out_cast = weight_casts(chain, recipe), output_cast(chain, recipe)
    constants = {c.name: c.graph_value for c in chain.constants}

    stand_ins = absent_nodes(recipe, chain)
    setup = graph_setup(recipe, chain)[0]
    bind_vars = dict(chain.bind_points)  # role -> the chain value the pass takes instead of the input

    def fused(*values):
        bound = dict(zip(roles, values, strict=True))
        given = dict(bound)
        if bind_vars:
            computed = {n.name: n.value for n in chain_values(chain, dict(bound), model_dtype)}
            bound |= {role: computed[var] for role, var in bind_vars.items()}
        bound |= {role: _op(op)(bound[of]) for role, op, of in stand_ins}
        bound = {r: v.to(recorded_dtype(casts[r])) if r in casts else v for r, v in bound.items()}
        like = bound[recipe.output_like]
        bound = {r: v.expand(like.shape) if r in recipe.flat_roles else v for r, v in bound.items()}
        bound = {r: v.unsqueeze(recipe.lift.dim) if r in lifted else v for r, v in bound.items()}
        x = bound[recipe.output_like]
        bound = {r: role_tensor(adapted, r, v) if r in adapted_names else v for r, v in bound.items()}
        if width is not None:  # a partial rotation's op takes x's leading channels
            bound[recipe.partial.role] = bound[recipe.partial.role][..., :width]
        rank = bound[recipe.output_like].dim()  # tables at x's rank, as broadcasting reads them
        bound = {r: v.reshape((1,) * (rank - v.dim()) + tuple(v.shape))
                 if r in recipe.graph_call.at_rank and v.dim() < rank else v for r, v in bound.items()}
        if setup:  # what the pass traces into the graph before its call
            exec("\n".join(setup), {"torch": torch}, bound)  # noqa: S102 - the catalog's own setup lines
        args = [bound[r] for r in recipe.graph_call.args]
        kwargs = {kw: constants[name] for kw, name in recipe.graph_call.kwargs}
        kwargs |= {kw: ast.literal_eval(literal) for kw, literal in variant.graph_choice.items()}
        kwargs |= {kw: bound.get(r) for kw, r in recipe.graph_call.role_kwargs}
        out = _op(recipe.graph_call.op)(*args, **kwargs)
        out = out[recipe.graph_call.output] if recipe.graph_call.output is not None else out
        out = out.squeeze(recipe.lift.dim) if lifted else out
        out = back_tensor(adapted, out, x) if adapted is not None else out
        if width is not None:  # the channels past the tables' width pass through
            out = torch.cat([out, given[recipe.partial.role][..., width:].to(out.dtype)], dim=-1)
        return out.to(recorded_dtype(out_cast)) if out_cast else out

    def search(*values):
        nodes = chain_values(chain, dict(zip(roles, values, strict=True)), model_dtype)
        return next(n.value for n in nodes if n.name == chain.output_var)

    try:
        with torch.no_grad():
            expected, chain_moved = measure(search, *inputs)
            got, replacement_moved = measure(fused, *inputs)
            judge = _judge(inputs, recipe.approximation)
            numerics = judge(got, expected)
            if numerics.passed:
                return GateRun(variant.name, dtype, numerics, None, (), None, chain_moved, replacement_moved)
            nodes = chain_values(chain, by_role, model_dtype)
            transform = find_input_transform(nodes, roles, inputs, fused, expected, judge)
            ignored = () if transform else ignored_inputs(search, fused, inputs, roles)
    except Exception as exc:  # noqa: BLE001 - as above
        return GateRun(variant.name, dtype, None, None, (), describe_error(exc))
    return GateRun(variant.name, dtype, numerics, transform, ignored)


def recorded_dtype(name: str):
    """`torch.float32` (a dtype as the chain records it) -> torch.float32."""
    import torch

    return getattr(torch, name.removeprefix("torch."))


def _op(name: str):
    """`npu.npu_rms_norm.default` -> torch.ops.npu.npu_rms_norm.default."""
    import torch

    target = torch.ops
    for part in name.split("."):
        target = getattr(target, part)
    return target
