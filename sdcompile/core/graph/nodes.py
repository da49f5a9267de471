"""Reading FX nodes back to the model: which submodule a node came from, which source lines, which op.

Dynamo records on every node it creates `meta["nn_module_stack"]` (the module call chain, outermost first,
as dynamo source paths such as `L['self'].__dict__['_modules']['transformer_blocks'].0.attn`) and
`meta["stack_trace"]` (the Python frames that produced it). AOT autograd and freezing copy that meta onto the
ATen nodes they derive, so an ATen node still says which submodule and which source line it implements.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sdcompile.util.source_paths import short_path

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\s*$')
_MODULES = re.compile(r"""(?:\.__dict__)?(?:\._modules|\['_modules'\])\[['"]([^'"]+)['"]\]""")
_ITEM = re.compile(r"""\[['"]?([^'"\]]+)['"]?\]""")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str  # the code object's name as the trace prints it: "forward", "__call__", "apply_rotary_emb"
    code: str  # the source line, stripped ("" when the trace had none)

    def short(self) -> str:
        return f"{short_path(self.file)}:{self.line} in {self.function}"


def fqn_from_source_path(path: str) -> str:
    """Dynamo's source path of a module -> its dotted name in the model (`transformer_blocks.0.attn.norm_q`)."""
    text = path
    for prefix in ("L['self']", 'L["self"]', "L['mod']", "self"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    text = _MODULES.sub(lambda m: "." + m.group(1), text)
    text = _ITEM.sub(lambda m: "." + m.group(1), text)
    return ".".join(part for part in text.split(".") if part)


def module_stack(node: Any, names: dict[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """(dotted module name, class qualname) for each module the node was created under, outermost first.

    Dynamo keys each entry by the module's id(); with `names` (id -> dotted name in the whole model, see
    `GraphCapture.module_names`) paths are exact even in graphs dynamo compiled from a nested frame (after a
    graph break), whose source paths start at that frame's `self`, not at the model.
    """
    stack = node.meta.get("nn_module_stack") or {}
    out = []
    for key, value in stack.items():
        path, cls = value if isinstance(value, tuple) else (value, None)
        cls_name = f"{cls.__module__}.{cls.__qualname__}" if isinstance(cls, type) else str(cls or "")
        name = names.get(str(key)) if names else None
        out.append((name if name is not None else fqn_from_source_path(str(path)), cls_name))
    return tuple(out)


def module_path(node: Any, names: dict[str, str] | None = None, root: str | None = None) -> str | None:
    """The innermost submodule the node belongs to; `root` (the module whose forward the graph was compiled
    from) for nodes outside any submodule call, else None."""
    stack = module_stack(node, names)
    return stack[-1][0] if stack else root


def frames(node: Any) -> tuple[Frame, ...]:
    """The Python frames recorded for the node, outermost first (empty when dynamo recorded none)."""
    text = node.meta.get("stack_trace") or ""
    found: list[Frame] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        if not m:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
        found.append(Frame(m["file"], int(m["line"]), m["func"], code))
    return tuple(found)


def innermost_source(node: Any) -> str:
    """`file:line in fn: code` of the node's innermost recorded frame ("" when dynamo recorded none)."""
    fs = frames(node)
    return f"{fs[-1].short()}: {fs[-1].code}" if fs else ""


def listing(nodes: Iterable[Any]) -> str:
    """Nodes as an FX dump reads them, each run under a comment naming the source line that produced it."""
    lines, last = [], None
    for node in nodes:
        if node.op == "output":
            lines.append(f"return {node.args[0]}")
            continue
        where = innermost_source(node)
        if where and where != last:
            lines.append(f"# {where}")
            last = where
        lines.append(format_node(node))
    return "\n".join(lines)


def graph_copy(gm: Any) -> Any:
    """A GraphModule sharing `gm`'s parameters and buffers over a deep copy of its graph (and a copy of its meta):
    what a pattern pass may rewrite while `gm` stays as it was."""
    import copy

    import torch.fx

    copied = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    copied.meta = dict(getattr(gm, "meta", {}) or {})
    return copied


def target_name(target: Any) -> str:
    """How a node's target reads everywhere in sdcompile: `aten.pow.Tensor_Scalar`, `npu.npu_rms_norm.default`,
    `getitem` (operator.getitem), a function's own name; a string target (get_attr, call_module) as it is."""
    if isinstance(target, str):
        return target
    if hasattr(target, "overloadpacket") or hasattr(target, "overloads"):  # OpOverload / OpOverloadPacket
        return str(target)
    return getattr(target, "__name__", None) or str(target)


def keyword_value(node: Any, key: str) -> Any:
    """The value keyword `key` of a call node has: as given, else the op schema's default (aten.gelu with no
    `approximate` is approximate='none'); None when neither says."""
    if key in node.kwargs:
        return node.kwargs[key]
    schema = getattr(node.target, "_schema", None)
    for argument in getattr(schema, "arguments", ()):
        if argument.name == key and argument.has_default_value():
            return argument.default_value
    return None


def op_name(node: Any) -> str:
    """A readable target: `aten.mul.Tensor`, `npu.npu_rms_norm.default`, `getitem`, or the node's op kind."""
    if node.op in ("placeholder", "output"):
        return node.op
    if node.op == "get_attr":
        return f"get_attr {node.target}"
    target = node.target
    if hasattr(target, "overloadpacket") or hasattr(target, "overloads"):  # OpOverload / OpOverloadPacket
        return target_name(target)
    module = getattr(target, "__module__", "") or ""
    qual = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or str(target)
    if module in ("_operator", "operator", "builtins"):
        return qual
    return f"{module}.{qual}" if module else qual


def format_node(node: Any) -> str:
    """One line, like the FX readable dump: `mul_13: bf16[1, 16, 2, 16] = aten.mul.Tensor(mul_12, arg34_1)`."""
    val = node.meta.get("val")
    spec = ""
    if val is not None and hasattr(val, "shape") and hasattr(val, "dtype"):
        spec = f": {_dtype_short(val.dtype)}{list(val.shape)}"
    if node.op == "placeholder":
        return f"{node.name}{spec} = placeholder"
    if node.op == "get_attr":
        return f"{node.name}{spec} = get_attr {node.target}"
    args = ", ".join(_fmt_arg(a) for a in node.args)
    kwargs = ", ".join(f"{k}={_fmt_arg(v)}" for k, v in node.kwargs.items())
    joined = ", ".join(x for x in (args, kwargs) if x)
    return f"{node.name}{spec} = {op_name(node)}({joined})"


def _fmt_arg(arg: Any) -> str:
    if hasattr(arg, "op") and hasattr(arg, "name"):
        return arg.name
    if isinstance(arg, (list, tuple)):
        inner = ", ".join(_fmt_arg(a) for a in arg)
        return f"[{inner}]"
    return repr(arg)


_DTYPE_SHORT = {
    "torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float64": "f64",
    "torch.int64": "i64", "torch.int32": "i32", "torch.bool": "b8", "torch.complex64": "c64",
}


def _dtype_short(dtype: Any) -> str:
    return _DTYPE_SHORT.get(str(dtype), str(dtype).replace("torch.", ""))
