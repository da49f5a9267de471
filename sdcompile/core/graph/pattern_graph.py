"""The pattern graph exactly as `register_replacement` traced and registered it.

MindIE-SD's `PatternMatchPass.register_pattern` hands `register_replacement` its own trace function
(`fwd_only_with_custom_decomp`, a wrapper over torch's `fwd_only` whose default decomposition table is the
target's `select_custom_decomp_table()`). Which table the search function is really traced with depends on the
installed torch (`sdcompile.core.torchcompat.pattern_matcher.effective_decomp_fn`): from 2.12 on
`register_replacement` passes its own `get_decomp_fn` to the trace function (inductor's `select_decomp_table`
unless the caller gives one), overriding the wrapper's default; before 2.12 the wrapper's own table applies.

So the registration calls are recorded as they happen (search function, example inputs, trace function,
keyword arguments), and the search function is traced again through torch's own
`gen_pattern_and_search_gm` with those same values. The PatternExpr that produces is compared with the entry
the matcher registered (`pattern_eq`), so the graph shown is the graph registered. While tracing, each node
gets the line of the search function that produced it (node meta only: the graph itself is unchanged).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.nodes import graph_copy, listing, op_name
from sdcompile.core.torchcompat.dynamo import detect_fake_mode, python_dispatcher
from sdcompile.core.torchcompat.pattern_matcher import (
    call_trace_fn,
    effective_decomp_fn,
    gen_pattern_and_search_gm,
    module,
    pattern_matcher_pass,
    pretty,
    register_with_table,
)


@dataclass
class RegistrationCall:
    """One `register_replacement` call as the target made it."""

    search_fn: Callable
    replace_fn: Callable
    example_inputs: list
    trace_fn: Callable
    options: dict[str, Any]  # the keyword arguments it was given (scalar_workaround, get_decomp_fn, ...)

    def get_decomp_fn(self) -> Callable:
        """The decomposition-table function the search function was traced with on this torch."""
        return self.decomp_choice()[0]

    def decomp_choice(self) -> tuple[Callable, str]:
        return effective_decomp_fn(self.trace_fn, self.options.get("get_decomp_fn"))


@dataclass
class PatternGraph:
    """A registered pattern: its search graph (nodes with source lines) and the entry the matcher holds."""

    name: str  # PatternBase.name()
    call: RegistrationCall
    gm: Any  # torch.fx.GraphModule: the search function as traced for registration
    expr: Any  # the PatternExpr that trace yields
    entry: Any  # the registered PatternEntry (pattern, extra_check), or None when none was found
    argnames: tuple[str, ...]
    source_file: str
    decompositions: int  # entries in the decomposition table the search function was traced with
    decomposition_source: str  # "torch._inductor.decomposition.select_decomp_table (given by register_replacement)"
    same_as_registered: bool | None  # None when there is no entry to compare with
    notes: list[str] = field(default_factory=list)
    # filled by the caller as it goes: `equivalence(self)` once, and table checks per stage graph (id -> result)
    equivalent: Callable | None = None
    table_checks: dict = field(default_factory=dict)

    @property
    def output_node(self):
        out = next(n for n in reversed(self.gm.graph.nodes) if n.op == "output")
        value = out.args[0]
        if isinstance(value, (list, tuple)):
            value = value[0]
        return value

    def printed(self) -> str:
        expr = self.entry.pattern if self.entry is not None else self.expr
        try:
            return pretty(expr)
        except Exception as exc:  # noqa: BLE001 - the printer has gaps for some PatternExpr kinds
            return f"<PatternPrettyPrinter failed: {exc}>\n{expr!r}"

    def readable(self) -> str:
        """The search graph like an FX dump, each node under the search-function line that produced it."""

        return listing(self.gm.graph.nodes)


# ------------------------------------------------------------------------------------------- recording
@contextmanager
def record_registrations() -> Iterator[list[RegistrationCall]]:
    """Record every `register_replacement` call made inside the block (the calls still happen)."""

    pm = module()

    calls: list[RegistrationCall] = []
    original = pm.register_replacement
    signature = inspect.signature(original)

    def recording(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
            values = dict(bound.arguments)
            calls.append(RegistrationCall(
                search_fn=values.pop("search_fn"), replace_fn=values.pop("replace_fn"),
                example_inputs=list(values.pop("example_inputs")), trace_fn=values.pop("trace_fn"),
                options={k: v for k, v in values.items() if k != "pass_dicts"},
            ))
        except (TypeError, KeyError):  # another signature: record nothing, never block the registration
            pass
        return original(*args, **kwargs)

    pm.register_replacement = recording
    try:
        yield calls
    finally:
        pm.register_replacement = original


def call_for(pattern_cls, calls: list[RegistrationCall]) -> RegistrationCall | None:
    """The registration call of one PatternBase class (the target passes `cls.pattern` as the search function)."""
    for call in calls:
        if call.search_fn is pattern_cls.pattern:
            return call
    return None


# --------------------------------------------------------------------------------------------- tracing
@contextmanager
def _source_lines(search_fn: Callable) -> Iterator[None]:
    """Attach `File "...", line N, in fn` of the search function's file to nodes created while it runs.

    Under `preserve_node_meta()` what `set_stack_trace` puts in the current meta is copied onto each node make_fx
    creates; fwd_only enters it itself on torch 2.9 and 2.13, not on 2.7, so it is entered here. Only node meta changes.
    """
    import torch.fx.traceback as fx_traceback

    try:
        filename = inspect.getsourcefile(search_fn) or ""
    except TypeError:
        filename = ""
    previous = sys.gettrace()
    if not filename:
        yield
        return

    def local(frame, event, _arg):
        if event == "line":
            code = _line(frame.f_code.co_filename, frame.f_lineno)
            fx_traceback.set_stack_trace(
                [f'  File "{frame.f_code.co_filename}", line {frame.f_lineno}, in {frame.f_code.co_name}\n    {code}\n']
            )
        return local

    def global_trace(frame, event, _arg):
        if event == "call" and frame.f_code.co_filename == filename:
            return local
        return None

    sys.settrace(global_trace)
    try:
        with fx_traceback.preserve_node_meta():
            yield
    finally:
        sys.settrace(previous)


def _line(filename: str, lineno: int) -> str:
    import linecache

    return linecache.getline(filename, lineno).strip()


def trace_registered(name: str, call: RegistrationCall, entry=None) -> PatternGraph:
    """Trace `call`'s search function the way register_replacement did; compare with the registered `entry`."""

    get_decomp_fn, given = call.decomp_choice()
    with _source_lines(call.search_fn):
        expr, gm = gen_pattern_and_search_gm(
            call.search_fn,
            call.example_inputs,
            call.trace_fn,
            call.options.get("scalar_workaround"),
            call.options.get("exclusive_arg_names", ()),
            get_decomp_fn,
        )
    try:
        table = get_decomp_fn() or {}
        size = len(table)
    except Exception:  # noqa: BLE001 - the size is informational
        size = -1
    same = None
    if entry is not None:
        try:
            same = bool(expr.pattern_eq(entry.pattern))
        except Exception:  # noqa: BLE001 - a PatternExpr kind without pattern_eq
            same = None
    try:
        source_file = inspect.getsourcefile(call.search_fn) or ""
    except TypeError:
        source_file = ""
    return PatternGraph(
        name=name, call=call, gm=gm, expr=expr, entry=entry,
        argnames=tuple(inspect.signature(call.search_fn).parameters),
        source_file=source_file, decompositions=size,
        decomposition_source=f"{_qualname(get_decomp_fn)} ({given})",
        same_as_registered=same,
    )


def retrace_exact(pattern: PatternGraph, bound: dict[str, Any]):
    """Trace the search function again with the matched model values' real shapes, strides and dtypes, as
    register_replacement's check does before it accepts a match; None when the values carry no metadata."""
    import torch

    args = []
    for name in pattern.argnames:
        value = bound.get(name)
        meta = value.meta.get("val", value.meta.get("example_value")) if hasattr(value, "meta") else value
        if meta is None and hasattr(value, "meta"):
            return None
        args.append(meta)

    fake_mode = detect_fake_mode(args)

    def fresh(arg):
        if not isinstance(arg, torch.Tensor):
            return arg
        return torch.empty_strided(arg.size(), arg.stride(), dtype=arg.dtype, device=arg.device)

    call = pattern.call
    with _source_lines(call.search_fn):
        if fake_mode is not None:
            with fake_mode:
                args = [fresh(a) for a in args]
                return call_trace_fn(call.trace_fn, call.search_fn, args, call.options.get("get_decomp_fn"))
        args = [fresh(a) for a in args]
        return call_trace_fn(call.trace_fn, call.search_fn, args, call.options.get("get_decomp_fn"))


def _qualname(fn: Any) -> str:
    module = getattr(fn, "__module__", "") or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}.{name}" if module else name


def equivalence(pattern: PatternGraph):
    """`(pattern node, model node) -> bool`: the model's op becomes the pattern's op under the table the pattern
    was traced with (`_to_copy` registered as `prims.convert_element_type`). Cached per op and input dtypes."""

    cache: dict[tuple, tuple[str, ...] | None] = {}

    def equivalent(p, m) -> bool:
        key = (m.target, tuple(str(getattr(a.meta.get("val"), "dtype", "")) for a in m.all_input_nodes))
        if key not in cache:
            cache[key] = decomposed_form(m, pattern)
        return bool(cache[key]) and op_name(p) in cache[key]

    return equivalent


def decomposed_form(node, pattern: PatternGraph) -> tuple[str, ...] | None:
    """The ops a model node's op becomes when traced with the pattern's decomposition table, or None when the
    op survives the table (or cannot be traced alone). Being listed in a table is not enough: many entries
    decline most inputs (inductor's add decomposition only rewrites complex tensors)."""
    import torch
    import torch.utils._pytree as pytree
    from torch.fx.experimental.proxy_tensor import make_fx

    if node.op != "call_function" or not hasattr(node.target, "overloadpacket"):
        return None

    def value(arg):
        if hasattr(arg, "meta"):
            return arg.meta.get("val", arg.meta.get("example_value"))
        return arg

    flat, spec = pytree.tree_flatten((list(node.args), dict(node.kwargs)))
    if any(hasattr(a, "meta") and value(a) is None for a in flat):
        return None  # an argument node without a recorded value (a literal None, e.g. no layer-norm weight, is fine)
    flat = [value(a) for a in flat]
    positions = [i for i, a in enumerate(flat) if isinstance(a, torch.Tensor)]
    target = node.target

    def call(*tensors):
        items = list(flat)
        for i, t in zip(positions, tensors, strict=True):
            items[i] = t
        args, kwargs = pytree.tree_unflatten(items, spec)
        return target(*args, **kwargs)

    tensors = [flat[i] for i in positions]

    fake_mode = detect_fake_mode(tensors)
    try:
        table = pattern.call.get_decomp_fn()()
        if fake_mode is not None:
            with fake_mode, python_dispatcher():
                fresh = [torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device) for t in tensors]
                gm = make_fx(call, table, tracing_mode="real")(*fresh)
        else:
            with python_dispatcher():
                gm = make_fx(call, table, tracing_mode="real")(*tensors)
    except Exception:  # noqa: BLE001 - no verdict rather than a wrong one
        return None
    ops = tuple(op_name(n) for n in gm.graph.nodes if n.op == "call_function")
    return None if op_name(node) in ops else ops


def replaced_with_table(pattern: PatternGraph, gm, get_decomp_fn) -> set[str]:
    """Names of the nodes of `gm` this pattern replaces when registered with `get_decomp_fn` instead of the table
    register_replacement used: the check behind a decomposition fix. Runs on a copy in a private pass."""

    import torch

    call = pattern.call
    options = {k: v for k, v in call.options.items() if k not in ("get_decomp_fn", "search_fn_pattern")}
    private = pattern_matcher_pass()
    register_with_table(call.search_fn, call.replace_fn, call.example_inputs, call.trace_fn, private,
                        get_decomp_fn, **options)
    work = graph_copy(gm)
    before = {n.name for n in work.graph.nodes}
    with torch.no_grad():
        while private.apply(work):
            pass
    return before - {n.name for n in work.graph.nodes}
