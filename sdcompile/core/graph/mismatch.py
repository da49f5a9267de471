"""Classify the first difference of an alignment into the seven mismatch types of catalogs/mismatches.toml.

The rules look at what differs (the field), on which side a node is extra, and which op family the nodes
belong to; the catalog supplies each type's name, path and the fix template the rule fills in. The order of
the checks is fixed, so the same graphs always get the same verdict:

  users      more users in the model than in the pattern -> 5 (external user); fewer -> 1 (recomputed value)
  node kind  the model has a get_attr constant where the pattern computes something -> 6 (7 when the unit
             test hits and the model has no replacement at all); a graph input where the pattern has a cast
             or view -> 3 / 4, any other op -> 1
  target     nothing lines up from the pattern's output: another implementation of the op -> 1 (form); a
             cast / view present on one side only -> 3 / 4; the model's op is rewritten by the
             decomposition table the pattern was traced with -> 1 (decomposition); a cast or view facing
             another op -> 3 / 4; otherwise -> 1 (overload or op)
  argument   a value the pattern reuses where the model has a cast / view of it -> 3 / 4; else -> 1
  dtype      -> 3;  shape (view sizes) -> 4;  constant -> 2 (eps when one value is the other in float32)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sdcompile.catalogs import load
from sdcompile.core.graph import align as A
from sdcompile.core.graph.alignment import ARGUMENT, DTYPE, NODE_KIND, SHAPE, TARGET, USERS, Difference
from sdcompile.core.graph.nodes import format_node, frames, op_name, short_path
from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.util.errors import BadInput


@dataclass(frozen=True)
class Cause:
    key: str
    when: str
    fix: str
    behaviour: str | None = None  # a torch behaviour (catalogs/torch_behaviours.toml) this cause usually comes from
    fix_otherwise: str | None = None  # the fix on torches without that behaviour

    def fix_here(self) -> str:
        """The fix that is true on the installed torch."""
        if self.behaviour is None or self.fix_otherwise is None:
            return self.fix

        return self.fix if holds(self.behaviour) else self.fix_otherwise


@dataclass(frozen=True)
class MismatchType:
    number: int
    name: str
    path: str  # "A": edit the pattern; "B": a custom graph pass
    summary: str
    explanation: str
    evidence: str
    fix: str
    example: str
    causes: tuple[Cause, ...]

    def cause(self, key: str) -> Cause:
        for c in self.causes:
            if c.key == key:
                return c
        raise KeyError(f"type {self.number} has no cause {key!r} in catalogs/mismatches.toml")


def catalog() -> tuple[MismatchType, ...]:
    types = []
    for entry in load("mismatches")["type"]:
        types.append(MismatchType(
            number=int(entry["number"]), name=entry["name"], path=entry["path"], summary=entry["summary"],
            explanation=" ".join(entry["explanation"].split()), evidence=entry["evidence"], fix=entry["fix"],
            example=entry["example"],
            causes=tuple(Cause(c["key"], c["when"], c["fix"], c.get("behaviour"), c.get("fix_otherwise"))
                         for c in entry.get("cause", ())),
        ))
    return tuple(sorted(types, key=lambda t: t.number))


def mismatch_type(number: int) -> MismatchType:
    for t in catalog():
        if t.number == number:
            return t
    raise BadInput(f"no mismatch type {number}", f"the types are {', '.join(str(t.number) for t in catalog())}")


@dataclass(frozen=True)
class Classification:
    type: int
    name: str
    cause: str
    path: str  # "A" or "B"
    fix: str  # the cause's template, filled in
    evidence: tuple[str, ...]


@dataclass
class Context:
    """What the classifier needs besides the difference itself."""

    stage: str  # "before_freezing" / "after_freezing" / ...
    origins: Mapping[str, Any]  # model node name -> TensorOrigin (placeholder / get_attr nodes)
    group: str = ""
    unit_hits: int | None = None  # the group's replacements of its own search functions at this stage
    model_hits: int | None = None  # the group's replacements in the whole model at this stage
    input_names: Mapping[Any, str] = field(default_factory=dict)  # pattern placeholder node -> input name
    bindings: Mapping[str, Any] = field(default_factory=dict)  # pattern input name -> model node
    decomposed: tuple[str, ...] | None = None  # what the model's op decomposes to under the pattern's table
    decompositions: str = ""  # which table the pattern was traced with
    torch_message: str | None = None
    matched: int | None = None  # pattern ops the alignment lined up
    pattern_output: Any = None  # the pattern's output node


def classify(diff: Difference, ctx: Context) -> Classification:
    number, key, fields = _rule(diff, ctx)
    entry = mismatch_type(number)
    fix = entry.cause(key).fix_here().format_map(_Fields(fields))
    return Classification(number, entry.name, key, entry.path, fix, tuple(_evidence(diff, ctx, number)))


def classify_accepted_constant(ctx: Context, input_name: str, node) -> Classification:
    """torch's matcher rejects a site where the only thing set apart is a pattern input bound to get_attr."""
    entry = mismatch_type(6)
    fields = {"input": input_name, "constant": node.target, "origin": _origin(ctx, node)}
    fix = entry.cause("constant_input").fix.format_map(_Fields(fields))
    evidence = [f"pattern input {input_name} binds get_attr {node.target} ({_origin(ctx, node)})"]
    if ctx.torch_message:
        evidence.append(f"torch's matcher: {ctx.torch_message}")
    return Classification(6, entry.name, "constant_input", entry.path, fix, tuple(evidence))


# ---------------------------------------------------------------------------------------------------- rules
# (type, cause) of a cast or view present on one side only, by its op family
_EXTRA_IN_MODEL = {"cast": (3, "extra_cast_in_model"), "view": (4, "extra_view_in_model")}
_MISSING_IN_MODEL = {"cast": (3, "missing_cast_in_model"), "view": (4, "missing_view_in_model")}
# (type, cause) of a differing field that needs no further look
_BY_FIELD = {DTYPE: (3, "cast_dtype"), SHAPE: (4, "view_shape")}
# target differences the walk explains itself; any other at the pattern's output means nothing lined up
_EXPLAINED_TARGET_KINDS = frozenset({"extra in model", "missing in model", "decomposition", "cast op"})


def _rule(diff: Difference, ctx: Context) -> tuple[int, str, dict]:
    """(type, cause, fix fields): the rule of the differing field (module docstring), constants last."""
    fields = _base_fields(diff, ctx)
    if diff.field in _BY_FIELD:
        number, key = _BY_FIELD[diff.field]
    else:
        number, key = _RULES.get(diff.field, _constant_rule)(diff, ctx, fields)
    return number, key, fields


def _pattern_family(diff: Difference) -> str | None:
    return A.family_of(diff.pattern) if diff.pattern is not None else None


def _model_family(diff: Difference) -> str | None:
    return A.family_of(diff.model) if A.is_op(diff.model) else None


def _users_rule(diff: Difference, ctx: Context, fields: dict) -> tuple[int, str]:
    if diff.kind != "external users":
        return 1, "fewer_users"
    fields["users"] = ", ".join(f"{u.name} ({op_name(u)})" for u in diff.model_value or ()) or "?"
    return 5, "external_users"


def _node_kind_rule(diff: Difference, ctx: Context, fields: dict) -> tuple[int, str]:
    m = diff.model
    if diff.kind == "model constant":
        fields.update(constant=m.target, origin=_origin(ctx, m), input=_inputs_below(diff.pattern, ctx))
        return (7, "silent_miss") if ctx.unit_hits and ctx.model_hits == 0 else (6, "frozen_constant")
    if diff.kind == "model input":
        return _MISSING_IN_MODEL.get(_pattern_family(diff), (1, "op"))
    return 1, "arguments"


def _target_rule(diff: Difference, ctx: Context, fields: dict) -> tuple[int, str]:
    m = diff.model
    p_family, m_family = _pattern_family(diff), _model_family(diff)
    if (diff.pattern is not None and diff.pattern is ctx.pattern_output and not ctx.matched
            and diff.kind not in _EXPLAINED_TARGET_KINDS):
        return 1, "form"
    if diff.kind == "extra in model":
        fields.update(_cast_fields(m), consumer=_consumer(diff.model_user, m, ctx))
        return _EXTRA_IN_MODEL["cast" if m_family == "cast" else "view"]
    if diff.kind == "missing in model":
        return _MISSING_IN_MODEL["cast" if p_family == "cast" else "view"]
    if diff.kind == "decomposition":
        return 1, "decomposition"
    if diff.kind == "cast op":
        fields.update(_cast_fields(m))
        dtype = f"dtype={fields['cast_torch_dtype']}" if "dtype" in m.kwargs else fields["cast_torch_dtype"]
        fields["cast_call"] = f"torch.ops.{fields['model_op']}(x, {dtype})"
        return 3, "cast_op"
    if (p_family == "cast") != (m_family == "cast"):
        return 3, "cast_vs_op"
    if (p_family == "view") != (m_family == "view"):
        return 4, "view_vs_op"
    return 1, ("overload" if diff.kind == "overload" else "op")


def _argument_rule(diff: Difference, ctx: Context, fields: dict) -> tuple[int, str]:
    m = diff.model
    if diff.kind != "reuse" or not A.is_op(m):
        return 1, "arguments"
    family = A.family_of(m)
    if family == "cast":
        fields.update(_cast_fields(m), consumer=_consumer(diff.model_user, m, ctx))
    elif family == "view":
        fields["consumer"] = _consumer(diff.model_user, m, ctx)
    return _EXTRA_IN_MODEL.get(family, (1, "reuse"))


def _constant_rule(diff: Difference, ctx: Context, fields: dict) -> tuple[int, str]:
    import torch

    pv, mv = diff.pattern_value, diff.model_value
    if isinstance(pv, float) and isinstance(mv, float):
        rounded = torch.tensor(pv, dtype=torch.float32).item()
        if rounded == mv or torch.tensor(mv, dtype=torch.float32).item() == pv:
            fields["rounded"] = repr(rounded)
            return 2, "eps"
    if isinstance(pv, (list, tuple)) and all(isinstance(v, int) for v in pv):
        return 2, "dims"
    return 2, "literal"


_RULES = {USERS: _users_rule, NODE_KIND: _node_kind_rule, TARGET: _target_rule, ARGUMENT: _argument_rule}


# ---------------------------------------------------------------------------------------------------- fields
class _Fields(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def _base_fields(diff: Difference, ctx: Context) -> dict:
    p, m = diff.pattern, diff.model
    fields: dict[str, Any] = {"stage": ctx.stage, "group": ctx.group, "decompositions": ctx.decompositions,
                              "position": diff.position}
    if p is not None:
        fields.update(pattern_op=op_name(p), pattern_node=p.name, pattern_source=source_line(p) or "the pattern")
    if A.is_node(m):
        fields.update(model_op=op_name(m), model_node=m.name, model_source=source_line(m) or "no source line kept")
    if diff.pattern_value is not None or diff.model_value is not None:
        fields.update(pattern_value=_literal(diff.pattern_value), model_value=_literal(diff.model_value))
    if ctx.unit_hits is not None:
        fields["unit_hits"] = ctx.unit_hits
    return fields


def _literal(value) -> str:
    return repr(value) if not isinstance(value, (list, tuple)) else f"[{', '.join(repr(v) for v in value)}]"


_DTYPE_SHORT = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32", "torch.float64": "fp64"}


def _cast_fields(node) -> dict:
    dtype = node.kwargs.get("dtype")
    if dtype is None:
        dtype = next((a for a in node.args[1:] if "dtype" in type(a).__name__), None)
    if dtype is None:
        val = node.meta.get("val")
        dtype = getattr(val, "dtype", None)
    text = str(dtype) if dtype is not None else "another dtype"
    return {"cast_op": op_name(node), "cast_dtype": _DTYPE_SHORT.get(text, text), "cast_torch_dtype": text}


_VERBS = {"mul": "multiply", "add": "add", "sub": "subtract", "div": "divide", "matmul": "matmul"}


def _consumer(user, produced, ctx: Context) -> str:
    """'the weight multiply (mul_1)': the model op using `produced`, named by the pattern input it combines with."""

    if user is None or not A.is_node(user):
        return "the pattern's output"
    bound = {id(v): k for k, v in ctx.bindings.items()}
    partners = [bound[id(a)] for a in user.all_input_nodes if a is not produced and id(a) in bound]
    packet = op_name(user).split(".")[1] if op_name(user).count(".") >= 2 else op_name(user)
    verb = _VERBS.get(packet, op_name(user))
    if partners:
        return f"the {partners[0]} {verb} ({user.name})"
    return f"{op_name(user)} ({user.name})"


def _origin(ctx: Context, node) -> str:
    origin = ctx.origins.get(node.name)
    return origin.describe() if origin is not None else "a constant"


def _inputs_below(p, ctx: Context) -> str:
    """The pattern inputs a pattern op is computed from (what the model froze into a constant)."""
    found, stack, seen = [], [p], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen or not A.is_node(node):
            continue
        seen.add(node)
        if node.op == "placeholder":
            found.append(ctx.input_names.get(node, str(node.target)))
        stack.extend(node.all_input_nodes)
    return ", ".join(sorted(set(found))) or "?"


def source_line(node) -> str:
    """`file:line in fn: code` of the innermost frame outside torch (model or pattern code), else the innermost."""

    fs = frames(node)
    if not fs:
        return ""
    own = [f for f in fs if not _in_torch(f.file)]
    f = own[-1] if own else fs[-1]
    return f"{display_path(f.file)}:{f.line} in {f.function}: {f.code}".rstrip(": ")


def display_path(path: str) -> str:
    """A source path as reports show it: from `diffusers/`, `mindiesd/`, or relative to the working folder."""
    from pathlib import Path

    shown = short_path(path)
    if shown != path:
        return shown
    marker = "/mindiesd/compilation/"
    if marker in path:
        return "mindiesd/compilation/" + path.rsplit(marker, 1)[1]
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def _in_torch(path: str) -> bool:
    return "/torch/" in path.replace("\\", "/")


def _evidence(diff: Difference, ctx: Context, number: int) -> list[str]:
    lines = [diff.detail]
    for side, node in (("pattern", diff.pattern), ("model", diff.model)):
        if A.is_node(node):
            where = source_line(node)
            lines.append(f"{side}: {format_node(node)}" + (f"  [{where}]" if where else ""))
    if A.is_node(diff.model) and diff.model.op == "get_attr":
        lines.append(f"model: {diff.model.name} holds {_origin(ctx, diff.model)} at {ctx.stage}")
    if ctx.decomposed and diff.kind == "decomposition":
        lines.append(f"the model's op decomposes to {', '.join(ctx.decomposed)} under {ctx.decompositions}")
    if number == 7:
        lines.append(f"unit test: {ctx.unit_hits} replacement(s) of the group's own search functions; model: "
                     f"{ctx.model_hits} at {ctx.stage}")
    if ctx.torch_message:
        lines.append(f"torch's matcher: {ctx.torch_message}")
    return lines
