"""A chain as data: the inputs, ops and constants of one site's ATen subgraph; how its ops and literals are spelled."""

from __future__ import annotations

import math
import operator
import struct
from dataclasses import dataclass, field
from typing import Any


class ChainError(ValueError):
    """The subgraph cannot be written as one pattern (several outputs, an unknown op, an input no role fits).
    `graph_pass_can`: a custom graph pass, matching the graph's own nodes, can still replace it."""

    def __init__(self, message: str, graph_pass_can: bool = False):
        super().__init__(message)
        self.graph_pass_can = graph_pass_can



@dataclass(frozen=True)
class ChainInput:
    role: str  # the parameter name in generated code
    node: str  # the graph node feeding the chain
    holder: str  # "placeholder" | "get_attr" | "computed"
    origin: str  # "parameter transformer_blocks.0.attn.norm_q.weight", "computed (aten.view...)"
    shape: tuple[int, ...]
    dtype: str  # "torch.bfloat16"
    dtype_expr: str  # "dtype" when it is the model dtype, else "torch.float32"
    # its dims from outermost to innermost in memory, when not in order (a transposed view: (0, 2, 1, 3)); () when
    # contiguous. Example inputs are laid out so: an op like view_as_complex needs its last dim innermost
    dim_order: tuple[int, ...] = ()


def laid_out(make, shape: tuple[int, ...], dim_order: tuple[int, ...], **make_kwargs):
    """`make(shape, **make_kwargs)` (a torch factory: torch.empty, torch.randn) with `dim_order`'s memory layout:
    made in that order, permuted back."""
    if not dim_order:
        return make(tuple(shape), **make_kwargs)
    inverse = [dim_order.index(d) for d in range(len(dim_order))]
    return make(tuple(shape[d] for d in dim_order), **make_kwargs).permute(*inverse)


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
    bind_points: tuple[tuple[str, str], ...] = ()  # (role, variable): the value a bind_at role enters its op as
    # indices into ops of the values other code reads too: the start op's result when several chains share it (one
    # LayerNorm modulated twice); only a graph pass can stand for such a chain, each chain computing it anew
    shared: tuple[int, ...] = ()

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


# Ops that carry a value on unchanged in meaning (a tuple's element, a cast, a view): walked through when a site is
# extended up to the norm that produced its input, or when a role's producer is checked (Role.not_from).
PASS_THROUGH = ("getitem", "aten._to_copy.default", "prims.convert_element_type.default", "aten.view.default",
                "aten.reshape.default", "aten.clone.default")


def is_literal(value: Any, literal: float) -> bool:
    """Whether an op argument is that number itself (not a tensor, not a bool): the 1 of `1 + scale`."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == literal


def producer(node) -> Any:
    """The node that computed `node`'s value, past the pass-through ops carrying it (`node` itself when none)."""
    while getattr(node, "op", None) == "call_function" and node.args and hasattr(node.args[0], "op"):
        try:
            name = op_target_name(node.target)
        except ChainError:
            break
        if name not in PASS_THROUGH:
            break
        node = node.args[0]
    return node


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

