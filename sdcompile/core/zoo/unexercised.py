"""Primitive calls the source holds and a recorded forward did not run: RoPE whose tables were not passed, an
RMSNorm behind a config flag, a branch these inputs did not take.

Each primitive call `static_match` finds in the code a forward can reach is compared with the lines `runtrace`
recorded. One that did not run is reported with the condition that kept it from running: the innermost guard
around it (guards.py) whose own line ran, in its function or, when that function never ran, at the call into it
from the nearest function that did. When that condition reads a parameter of its function that is also an argument
of the model's forward (by the same name), the input and the value these inputs gave it (or its default) are said;
when it reads a config key of the model or an attribute of `self`, that value.

Not reported, because the primitive runs there by another way: a call in a function where another call of the same
primitive ran (an alternative path, e.g. the manual chain beside `torch_npu.npu_rms_norm`), and diffusers' own
torch_npu branches (the condition calls a gate of catalogs/npu_branches.toml; analyze's NPU note
covers them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sdcompile.core.zoo.guards import Guard, GuardKind, guards_of, parents
from sdcompile.core.zoo.primitives import npu_branches, primitive_rules
from sdcompile.core.zoo.static_match import StaticSite, static_sites
from sdcompile.core.zoo.static_sites import Reach, Unit, reach, source_line

_SIMPLE = (type(None), bool, int, float, str)
_MAX_CODE = 160


@dataclass(frozen=True)
class UnexercisedSite:
    op: str
    file: str  # real path of the primitive call
    line: int
    lines: tuple[int, ...]  # every call of this primitive in that function left out by the same condition
    code: str  # the source line of `line`, stripped
    function: str  # qualname of the function holding it
    matched_by: str  # the catalog rule ("function apply_rotary_emb*")
    not_run: str  # the outermost function on the way to it that never ran ("" when its own function ran)
    guard: Guard | None  # the condition that decided (guard_ran) or, when none of them ran, the innermost
    guard_ran: bool  # the guard's own line ran in this forward: it is the condition that kept the call out
    guard_file: str  # where the guard is (the caller's file when the function never ran)
    guard_function: str  # the function the guard is in (the caller when the function never ran)
    argument: str | None  # the model's forward argument the guard reads, by name
    parameter: str | None  # else a parameter of the guard's function it reads, which the model's forward lacks
    argument_given: bool  # these inputs pass it
    argument_value: str | None  # its value in these inputs, or its default ("None", "False", "tensor[1, 8, 2]")
    setting: str | None  # "config.use_rope" or "self.use_rope": a setting the guard reads
    setting_value: str | None


def describe_value(value: Any) -> str:
    """A value as the warning names it: repr for None, booleans, numbers and short strings, else its kind."""
    if isinstance(value, _SIMPLE):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"tensor{list(shape)}"
    if isinstance(value, (tuple, list, dict)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def executed_lines(trace) -> dict[str, set[int]]:
    """real path -> the lines a recorded forward ran there (RunTrace.lines is per code object)."""
    found: dict[str, set[int]] = {}
    real: dict[str, str] = {}
    for code, lines in trace.lines.items():
        name = code.co_filename
        path = real.get(name) or real.setdefault(name, os.path.realpath(name))
        found.setdefault(path, set()).update(lines)
    return found


class _Compare:
    def __init__(self, trace, model, inputs: dict[str, Any], found: Reach, gates: tuple[str, ...]):
        import inspect

        self.executed = executed_lines(trace)
        self.model, self.inputs, self.reach, self.gates = model, inputs, found, gates
        try:
            self.top_params = inspect.signature(type(model).forward).parameters
        except (TypeError, ValueError):
            self.top_params = {}
        self._parents: dict[tuple[str, int], dict[int, Any]] = {}
        self.site_nodes: set[tuple[str, int]] = set()  # (op, id(node)) of every primitive call found

    def ran(self, file: str, first: int, last: int) -> bool:
        lines = self.executed.get(file, ())
        return any(n in lines for n in range(first, last + 1))

    def unit_ran(self, unit: Unit) -> bool:
        body = unit.node.body
        return self.ran(unit.file, body[0].lineno, unit.node.end_lineno or body[-1].lineno)

    def site_ran(self, site: StaticSite) -> bool:
        """Its lines ran; and for a call on the line of the ternary or `and`/`or` deciding it
        (`q = rope(q) if r else q`), the function it calls ran too, when that function is known."""
        if not self.ran(site.unit.file, site.line, site.end_line):
            return False
        inline = {GuardKind.TERNARY, GuardKind.AND, GuardKind.OR}
        if not any(g.kind in inline and g.line == site.line for g in self.guards(site.node, site.unit)):
            return True
        callees = self.reach.callees.get((site.unit.key, id(site.node)), ())
        return not callees or any(self.unit_ran(c) for c in callees)

    def guards(self, node, unit: Unit) -> tuple[Guard, ...]:
        if unit.key not in self._parents:
            self._parents[unit.key] = parents(unit.node)
        return guards_of(node, unit.node, self._parents[unit.key])

    def where(self, site: StaticSite) -> tuple[Unit, Any, str, bool] | None:
        """(the function that ran, the node in it that did not, the outermost function that never ran, whether the
        chain reached a function that ran); None when a call on the way is itself a call of the primitive (the
        inside of `apply_rotary_emb` is reported at the call of it)."""
        unit, node, not_run, seen = site.unit, site.node, "", set()
        while not self.unit_ran(unit):
            not_run = unit.qualname
            edge = self.reach.callers.get(unit.key)
            if edge is None or unit.key in seen:
                return unit, node, not_run, False
            if (site.op, id(edge.call)) in self.site_nodes:
                return None
            seen.add(unit.key)
            unit, node = edge.caller, edge.call
        return unit, node, not_run, True

    def argument(self, guard: Guard, unit: Unit) -> tuple[str | None, bool, str | None]:
        """(the model's forward argument the guard reads, whether these inputs pass it, its value or default)."""
        import inspect

        for name in guard.names:
            if name in unit.params and name in self.top_params:
                if name in self.inputs:
                    return name, True, describe_value(self.inputs[name])
                default = self.top_params[name].default
                return name, False, None if default is inspect.Parameter.empty else describe_value(default)
        return None, False, None

    def setting(self, guard: Guard, unit: Unit) -> tuple[str | None, str | None]:
        """A config key of the model the guard names, else an attribute of `self` (or of the module an attention
        processor is called with) that has one plain value on every instance that runs this code."""
        import ast

        config = getattr(self.model, "config", None)
        for key in (*guard.names, *guard.attributes):
            if isinstance(config, dict) and key in config and isinstance(config[key], _SIMPLE):
                return f"config.{key}", describe_value(config[key])
        for n in ast.walk(guard.node):
            if not (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)):
                continue
            values = {describe_value(getattr(i, n.attr)) for i in self.instances(n.value.id, unit)
                      if isinstance(getattr(i, n.attr, ()), _SIMPLE)}
            if len(values) == 1:
                return f"{n.value.id}.{n.attr}", values.pop()
        return None, None

    def instances(self, name: str, unit: Unit) -> list[Any]:
        """The objects `name` is in `unit`'s code: `self`'s instances; for an attention processor's first
        parameter (`attn`), the modules holding that processor."""
        owner = unit.owner
        if owner is None:
            return []
        if name == "self":
            return list(self.reach.live.get(owner, ()))
        if unit.params[:1] == (name,) and not hasattr(owner, "forward"):
            return [m for instances in self.reach.live.values() for m in instances
                    if type(getattr(m, "processor", None)) is owner]
        return []

    def report(self, site: StaticSite) -> UnexercisedSite | None:
        where = self.where(site)
        if where is None:
            return None
        unit, node, not_run, reached = where
        guards = self.guards(node, unit) if reached else ()
        chain = guards + (self.guards(site.node, site.unit) if not_run else ())
        if any(g in self.gates for guard in chain for g in (*guard.names, *guard.attributes)):
            return None  # diffusers' own torch_npu branch: the NPU note covers it
        lines = self.executed.get(unit.file, set())
        deciding = next((g for g in guards if g.line in lines), None)
        guard = deciding or (guards[0] if guards else None)
        argument, given, value = self.argument(guard, unit) if guard else (None, False, None)
        parameter = None if argument or guard is None else next((n for n in guard.names if n in unit.params), None)
        setting, setting_value = self.setting(guard, unit) if guard else (None, None)
        code = source_line(site.unit.file, site.line)
        return UnexercisedSite(
            op=site.op, file=site.unit.file, line=site.line, lines=(site.line,),
            code=code if len(code) <= _MAX_CODE else code[:_MAX_CODE - 3] + "...", function=site.unit.qualname,
            matched_by=site.matched_by, not_run=not_run, guard=guard, guard_ran=deciding is not None,
            guard_file=unit.file, guard_function=unit.qualname, argument=argument, parameter=parameter,
            argument_given=given, argument_value=value, setting=setting, setting_value=setting_value,
        )


def _group(found: list[UnexercisedSite]) -> tuple[UnexercisedSite, ...]:
    """One entry per function, condition and op: `query = rope(...)` and `key = rope(...)` under one `if`."""
    from dataclasses import replace

    groups: dict[tuple, UnexercisedSite] = {}
    for item in sorted(found, key=lambda u: (u.file, u.line)):
        guard = (item.guard.line, item.guard.test) if item.guard else None
        key = (item.op, item.file, item.function, item.not_run, item.guard_file, guard)
        first = groups.get(key)
        groups[key] = item if first is None else replace(first, lines=(*first.lines, item.line))
    return tuple(groups.values())


def compare(trace, model, inputs: dict[str, Any], found: Reach, sites: list[StaticSite], gates: tuple[str, ...],
            located: dict[str, set[tuple[str, int]]]) -> dict[str, tuple[UnexercisedSite, ...]]:
    """Per op, the primitive calls of `sites` the recorded forward did not run (see the module docstring).
    `located`: per op, (real path, first line) of the code `locate` found it in."""
    cmp = _Compare(trace, model, inputs, found, gates)
    # a function matched by its ops that ran is what the run says it is: a primitive only where located
    sites = [s for s in sites if s.target is None or not cmp.unit_ran(s.target)
             or (s.target.file, s.target.first_line) in located.get(s.op, ())]
    cmp.site_nodes = {(s.op, id(s.node)) for s in sites}
    ran = {(s.op, s.unit.key) for s in sites if cmp.site_ran(s)}
    left = [s for s in sites if (s.op, s.unit.key) not in ran]  # an alternative in the same function ran
    reported = {(s.op, s.matched_class) for s in left if s.matched_class}
    by_op: dict[str, list[UnexercisedSite]] = {}
    for site in sorted(left, key=lambda s: (s.unit.file, s.line)):
        item = cmp.report(site)
        if item is None:
            continue
        owner = site.unit.owner.__name__ if site.unit.owner is not None else ""
        if item.not_run and item.guard is None and (site.op, owner) in reported:
            continue  # a module of that class never ran, and its call is reported with its condition
        by_op.setdefault(site.op, []).append(item)
    return {op: _group(items) for op, items in by_op.items()}


def unexercised(trace, model, inputs: dict[str, Any], ops: tuple[str, ...],
                located: dict[str, list] | None = None) -> dict[str, tuple[UnexercisedSite, ...]]:
    """The primitive calls of `ops` in `model`'s source that `trace` (one forward on `inputs`) did not run;
    `located`: what `locate` found in that trace (per op, its Located implementations)."""

    codes = {op: {(os.path.realpath(c.co_filename), c.co_firstlineno) for loc in found_ for c in loc.codes}
             for op, found_ in (located or {}).items()}
    try:
        found = reach(model)
        sites = static_sites(found, primitive_rules(), ops)
        return compare(trace, model, inputs, found, sites, npu_branches().gates, codes)
    except Exception as exc:  # source this reader does not follow must not cost the analysis it adds to
        from sdcompile.util.log import get_logger

        get_logger(__name__).warning("reading the model's source for primitives that did not run failed (%s: %s); "
                                     "analyze reports what ran only", type(exc).__name__, exc)
        return {}
