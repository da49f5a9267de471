"""torch._inductor.pattern_matcher as the installed torch has it.

The difference that changes verdicts: from torch 2.12 on `register_replacement` takes a `get_decomp_fn`
(default inductor's `select_decomp_table`) and passes it to the trace function, overriding the trace function's
own default; before 2.12 it calls `trace_fn(search_fn, args)`, so the trace function's default table applies
(for MindIE-SD's `fwd_only_with_custom_decomp`, the target's own, empty, table). `forwards_decomp_fn()` probes
that from the signature; the helpers below trace and register the way the installed torch does.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


def module():
    from torch._inductor import pattern_matcher as pm

    return pm


@functools.cache
def forwards_decomp_fn() -> bool:
    """True when register_replacement hands its own get_decomp_fn to the trace function (torch >= 2.12)."""
    return "get_decomp_fn" in inspect.signature(module().register_replacement).parameters


@functools.cache
def search_trace_takes_decomp_fn() -> bool:
    return "get_decomp_fn" in inspect.signature(module().gen_pattern_and_search_gm).parameters


def register_replacement_signature() -> inspect.Signature:
    return inspect.signature(module().register_replacement)


def trace_fn_default_decomp(trace_fn: Callable) -> Callable | None:
    """The decomposition-table function a trace function uses when called as `trace_fn(fn, args)`."""
    try:
        parameter = inspect.signature(trace_fn).parameters.get("get_decomp_fn")
    except (TypeError, ValueError):
        return None
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default


def effective_decomp_fn(trace_fn: Callable, given: Callable | None) -> tuple[Callable, str]:
    """The table function the search function is really traced with, and who chose it.

    `given` is the get_decomp_fn the caller passed to register_replacement (None when it passed none)."""
    pm = module()
    if forwards_decomp_fn():
        if given is not None:
            return given, "given by the caller"
        default = register_replacement_signature().parameters["get_decomp_fn"].default
        return default, "register_replacement's own default, which it passes to the trace function"
    own = trace_fn_default_decomp(trace_fn)
    if own is not None:
        return own, "the trace function's own default (register_replacement passes none on this torch)"
    # fwd_only with get_decomp_fn=None falls back to inductor's table
    return pm.select_decomp_table, "fwd_only's fallback (neither register_replacement nor the trace function chose)"


def call_trace_fn(trace_fn: Callable, fn: Callable, args: list, given: Callable | None = None):
    """Call a trace function the way register_replacement does on this torch: with its get_decomp_fn (`given`
    by the caller, else its own default) where it forwards one, as `trace_fn(fn, args)` where it does not."""
    if forwards_decomp_fn():
        return trace_fn(fn, args, get_decomp_fn=effective_decomp_fn(trace_fn, given)[0])
    return trace_fn(fn, args)


def gen_pattern_and_search_gm(search_fn: Callable, example_inputs: list, trace_fn: Callable,
                              scalar_workaround: dict | None, exclusive_arg_names, get_decomp_fn: Callable):
    """torch's own trace of a search function into (PatternExpr, GraphModule), with `get_decomp_fn` applied on
    every torch (older ones do not take it: the trace function is bound to it instead)."""
    pm = module()
    if search_trace_takes_decomp_fn():
        return pm.gen_pattern_and_search_gm(search_fn, example_inputs, trace_fn, scalar_workaround,
                                            exclusive_arg_names, get_decomp_fn=get_decomp_fn)
    bound = _bound_trace_fn(trace_fn, get_decomp_fn)
    return pm.gen_pattern_and_search_gm(search_fn, example_inputs, bound, scalar_workaround, exclusive_arg_names)


def _bound_trace_fn(trace_fn: Callable, get_decomp_fn: Callable) -> Callable:
    if trace_fn_default_decomp(trace_fn) is None and "get_decomp_fn" not in _parameters(trace_fn):
        return trace_fn  # a trace function with no table of its own to choose

    def traced(fn, args, **kwargs):
        kwargs.setdefault("get_decomp_fn", get_decomp_fn)
        return trace_fn(fn, args, **kwargs)

    return traced


def _parameters(fn: Callable) -> dict:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def register_with_table(search_fn: Callable, replace_fn: Callable, example_inputs: list, trace_fn: Callable,
                        pass_dicts, get_decomp_fn: Callable, **options: Any) -> bool:
    """register_replacement with the search function traced under `get_decomp_fn` on every torch: given as the
    keyword where torch forwards it, bound into the trace function where it does not."""
    pm = module()
    if forwards_decomp_fn():
        return pm.register_replacement(search_fn, replace_fn, example_inputs, trace_fn, pass_dicts, **options,
                                       get_decomp_fn=get_decomp_fn)
    return pm.register_replacement(search_fn, replace_fn, example_inputs, _bound_trace_fn(trace_fn, get_decomp_fn),
                                   pass_dicts, **options)


def pattern_matcher_pass():
    return module().PatternMatcherPass()


def pretty(expr) -> str:
    return module().PatternPrettyPrinter.run(expr)


def failed_match_text(match) -> str:
    """A FailedMatch's message. Some of torch's own (2.9) name a field their arguments lack, so str() raises
    KeyError: the format string and the arguments are then shown as they are."""
    try:
        return str(match)
    except (KeyError, IndexError, ValueError):
        fmt = getattr(match, "format_string", type(match).__name__)
        args = ", ".join([*(repr(a) for a in getattr(match, "args", ())),
                          *(f"{k}={v!r}" for k, v in getattr(match, "kwargs", {}).items())])
        return f"{fmt} ({args})" if args else str(fmt)


def is_match(match) -> bool:
    return module().is_match(match)


def pattern_expr_type() -> type:
    return module().PatternExpr
