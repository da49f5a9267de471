"""Locate by running: which implementations of each primitive ran in a recorded forward, and at which sites.

An implementation is one of
    class     a module class (`torch.nn.RMSNorm`, `normalization.AdaLayerNormZero`, a user's `MyRMSNorm`)
    function  a Python function (`embeddings.apply_rotary_emb`, Wan's local `apply_rotary_emb`)
    inline    code inside a larger function (Flux's block forward computing `norm2(x) * (1 + scale) + shift`)
and a site is the model submodule it ran for (`transformer_blocks.0.attn.norm_q`; "" is the model itself).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from sdcompile.core.ops import OPS
from sdcompile.core.zoo.primitives import PrimitiveRules, primitive_rules
from sdcompile.core.zoo.provenance import ModulationEvent
from sdcompile.core.zoo.rotation import RotationEvent
from sdcompile.core.zoo.runtrace import FrameInfo, RunTrace


@dataclass(frozen=True)
class SiteUse:
    path: str  # "" for the model itself
    module_class: str  # class of the module at that path
    calls: int  # times it ran there in one forward: module calls (class), runs of the function (q's and k's
    # RoPE: 2), modulations computed (inline code; a class that computes several per call)
    # AdaLN: a modulation ran here. False for a site of a class or function that modulates at its other sites but
    # not at this one (Mochi's modulated RMSNorm applied with a tanh gate): no AdaLN chain to replace here
    modulates: bool = True


@dataclass(frozen=True)
class TensorRead:
    site: str
    tensor: str  # "transformer_blocks.0.attn.norm_q.weight"
    kind: str  # "parameter" | "buffer" | "tensor attribute"
    by: str  # the code that read it: "RMSNorm.forward"
    line: int


@dataclass(frozen=True)
class Located:
    op: str
    key: str
    kind: str  # "class" | "function" | "inline"
    qualified_name: str  # "diffusers.models.normalization.RMSNorm"
    display_name: str  # "normalization.RMSNorm", "torch.nn.RMSNorm"
    scope: str  # "torch" | "diffusers (shared)" | "model-local" | "user code"
    file: str
    obj: Any = field(repr=False)  # the class, or the code object of the function
    codes: tuple[CodeType, ...] = field(repr=False)  # code objects whose executed lines belong to it
    lines: tuple[int, ...]  # inline: the lines that compute it
    matched_by: tuple[str, ...]
    sites: tuple[SiteUse, ...]
    ops: frozenset[str]  # ops its own code called
    form: str | None
    order: str | None  # AdaLN: "shift, scale" or "scale, shift" as the split hands them out
    reads: tuple[TensorRead, ...]  # model tensors its own code read
    npu_calls: tuple[str, ...]  # torch_npu ops its code called in this run
    producer_only: bool = False  # AdaLN: a class that only produces shift/scale/gate; its caller applies them

    @property
    def site_count(self) -> int:
        return len(self.sites)


@dataclass
class _Builder:
    op: str
    kind: str
    obj: Any
    frame: FrameInfo | None
    matched_by: list[str] = field(default_factory=list)
    sites: dict[str, int] = field(default_factory=dict)
    frames: set[tuple[CodeType, str]] = field(default_factory=set)
    lines: set[int] = field(default_factory=set)
    events: list[ModulationEvent] = field(default_factory=list)
    rotations: list[RotationEvent] = field(default_factory=list)
    activations: dict[str, set[int]] = field(default_factory=dict)  # per site: the runs of its code credited

    def ran(self, site: str, calls) -> None:
        self.activations.setdefault(site, set()).update(c.activation for c in calls if c.activation)

    def count(self, site: str, recorded: int) -> int:
        """How many times it ran at `site` (see SiteUse.calls); `recorded`: the module calls or evidence count."""
        events = sum(1 for e in self.events if e.site == site)
        runs = len(self.activations.get(site, ()))
        if self.kind == "class":
            return max(recorded, events)
        if self.kind == "inline" and events:
            return events
        rotations = sum(1 for r in self.rotations if r.site == site)
        if self.kind == "inline" and rotations:
            return rotations
        return runs or recorded

    def reason(self, text: str) -> None:
        if text not in self.matched_by:
            self.matched_by.append(text)


def locate(trace: RunTrace, model_class: type, ops: tuple[str, ...] = OPS) -> dict[str, list[Located]]:
    """Every implementation of each requested primitive that ran, grouped by implementation, sites counted."""
    import inspect

    try:
        model_file = os.path.realpath(inspect.getsourcefile(model_class) or "")
    except TypeError:
        model_file = ""
    rules = primitive_rules()
    by_frame = _calls_by_frame(trace)
    return {op: _locate_op(trace, rules[op], by_frame, model_file) for op in ops}


def _calls_by_frame(trace: RunTrace) -> dict[tuple[CodeType, str], list]:
    found: dict[tuple[CodeType, str], list] = {}
    for call in trace.calls:
        found.setdefault((call.frame.code, call.site), []).append(call)
    return found


def _is_method(code: CodeType) -> bool:
    return code.co_argcount > 0 and code.co_varnames[:1] == ("self",)


def _locate_op(trace: RunTrace, rules: PrimitiveRules, by_frame, model_file: str) -> list[Located]:
    locator = _Locator(trace, rules)
    locator.module_classes()
    locator.code_that_ran(by_frame)
    if rules.modulation:
        locator.modulations()
    if rules.rotation:
        locator.rotations()
    return sorted((_finish(b, trace, rules, by_frame, model_file) for b in locator.builders.values()),
                  key=lambda loc: (-loc.site_count, loc.display_name))


class _Locator:
    """Collects one primitive's evidence from a run, per class, function or inline code (a _Builder each)."""

    def __init__(self, trace: RunTrace, rules: PrimitiveRules):
        self.trace, self.rules = trace, rules
        self.builders: dict[Any, _Builder] = {}

    def module_classes(self) -> None:
        """1. module classes that ran"""
        rules = self.rules
        for path, run in self.trace.modules.items():
            glob = rules.class_matches(run.cls.__name__)
            if glob is None:
                continue
            b = self.builders.setdefault(run.cls, _Builder(rules.op, "class", run.cls, None))
            b.reason(f"class {glob}")
            b.sites[path] = b.sites.get(path, 0) + run.calls

    def code_that_ran(self, by_frame) -> None:
        """2. code that ran: by its name, the torch functions it called, its op signature, the tensors it read"""
        rules = self.rules
        for (_code, site), calls in by_frame.items():
            frame = calls[0].frame
            ops = frozenset(c.op for c in calls)
            glob = rules.function_matches(frame.name)
            if glob is not None:
                self.attribute(frame, site, f"function {glob}", [c.line for c in calls], calls)
            hit = ops & rules.torch_functions
            if hit:
                used = [c for c in calls if c.op in rules.torch_functions]
                self.attribute(frame, site, f"calls {'/'.join(sorted(hit))}", [c.line for c in used], used)
            for sig in rules.signatures:
                if sig.matches(ops):
                    self.attribute(frame, site, f"ops {sig.describe()}", [c.line for c in calls], calls)
            self._tensors_read(frame, site, calls)

    def _tensors_read(self, frame: FrameInfo, site: str, calls) -> None:
        for call in calls:
            for tensor in call.tensors_read:
                attr = tensor.rsplit(".", 1)[-1]
                pglob = self.rules.parameter_matches(attr)
                if pglob is not None:
                    self.attribute(frame, site, f"reads {pglob}", [call.line], [call])

    def modulations(self) -> None:
        """3. x * (1 + scale) + shift"""
        for event in self.trace.modulations:
            shape = "x * (1 + scale) + shift" if event.with_shift else "x * (1 + scale)"
            b = self.attribute(event.frame, event.site, f"modulation {shape}", event.lines)
            if b is not None:
                b.events.append(event)

    def rotations(self) -> None:
        """4. x * cos + rot(x) * sin: a site where no other evidence found it (an attention processor's inline RoPE),
        and for inline code found by its ops, how many tensors it rotated"""
        owner = {frame: b for b in self.builders.values() for frame, _site in b.frames}
        for event in self.trace.rotations:
            b = owner.get(event.frame.code)
            if b is None:
                b = self.attribute(event.frame, event.site, "rotation x * cos + rot(x) * sin", event.lines)
            if b is not None:
                b.rotations.append(event)

    def attribute(self, frame: FrameInfo, site: str, reason: str, lines, calls=()) -> _Builder | None:
        """Credit the evidence to the frame's module class when it is one the primitive is, else to its code."""
        cls = frame.self_class
        if cls is not None:
            if self.rules.is_excluded(cls.__name__):
                return None  # e.g. a modulated RMSNorm is AdaLN, not RMSNorm
            run = self.trace.modules.get(site)
            leaf = run is not None and not run.called_children
            if cls in self.builders or leaf:
                b = self.builders.setdefault(cls, _Builder(self.rules.op, "class", cls, None))
                b.sites.setdefault(site, run.calls if run else 1)
                b.frames.add((frame.code, site))
                b.reason(reason)
                return b
        kind = "inline" if _is_method(frame.code) or cls is not None else "function"
        key = (frame.code, kind)
        b = self.builders.setdefault(key, _Builder(self.rules.op, kind, frame.code, frame))
        b.sites[site] = b.sites.get(site, 0) + 1
        b.frames.add((frame.code, site))
        b.lines.update(lines)
        b.ran(site, calls)
        b.reason(reason)
        return b


def _finish(b: _Builder, trace: RunTrace, rules: PrimitiveRules, by_frame, model_file: str) -> Located:
    import inspect

    if b.kind == "class":
        cls = b.obj
        module_name, qualname = cls.__module__, cls.__qualname__
        try:
            file = inspect.getsourcefile(cls) or ""
        except TypeError:
            file = ""
        codes = _class_codes(cls)
        # its own code, at its own sites
        own = [(c, s) for (c, s) in by_frame if s in b.sites and c in codes]
        display = _torch_public_name(cls) or f"{module_name.rsplit('.', 1)[-1]}.{qualname}"
    else:
        frame = b.frame
        module_name, qualname, file = frame.module_name, frame.qualname, frame.file
        codes = (frame.code, *_nested_codes(frame.code))
        own = sorted(b.frames, key=lambda k: k[1])
        display = f"{module_name.rsplit('.', 1)[-1]}.{qualname}" + (" (inline)" if b.kind == "inline" else "")
    calls = [c for key in own for c in by_frame.get(key, ())]
    if b.kind == "inline" and b.lines:
        calls = [c for c in calls if c.line in b.lines]
    ops = frozenset(c.op for c in calls).union(*(r.ops for r in b.rotations))
    call_args: dict[str, set] = {}
    for c in calls:
        for k, v in c.kwargs:
            call_args.setdefault(k, set()).add(v)
    if "gelu" in ops and "approximate" not in call_args:
        call_args["approximate"] = {"none"}
    form, order = _form(b, rules, ops, call_args)
    reads = []
    seen = set()
    for c in calls:
        for tensor in c.tensors_read:
            if (c.site, tensor) in seen:
                continue
            seen.add((c.site, tensor))
            kind = trace.tensors.get(tensor, ("tensor attribute", None))[0]
            reads.append(TensorRead(c.site, tensor, kind, c.frame.qualname, c.line))
    modulated = {e.site for e in b.events}
    sites = tuple(
        SiteUse(path, _module_class_name(trace, path), b.count(path, count),
                not (rules.modulation and modulated and b.kind in ("class", "function") and path not in modulated))
        for path, count in sorted(b.sites.items())
    )
    key = f"{module_name}.{qualname}" + (f"#{b.kind}" if b.kind == "inline" else "")
    return Located(
        op=b.op,
        key=key,
        kind=b.kind,
        qualified_name=f"{module_name}.{qualname}",
        display_name=display,
        scope=_scope(file, model_file),
        file=file,
        obj=b.obj,
        codes=codes,
        lines=tuple(sorted(b.lines)) if b.kind == "inline" else (),
        matched_by=tuple(b.matched_by),
        sites=sites,
        ops=ops,
        form=form,
        order=order,
        reads=tuple(reads),
        npu_calls=tuple(sorted({c.raw for c in calls if c.op.startswith("npu")})),
        # a class or function in which no modulation ran (AdaLayerNormSingle, LTX 2's get_mod_params): it computes
        # shift/scale/gate for its callers, which apply them
        producer_only=bool(rules.modulation and not b.events and b.kind in ("class", "function")),
    )


def _form(b: _Builder, rules: PrimitiveRules, ops, call_args) -> tuple[str | None, str | None]:
    if rules.modulation:
        if b.events:
            forms = Counter(e.form() for e in b.events)
            orders = Counter(o for o in (e.order() for e in b.events) if o)
            order = orders.most_common(1)[0][0] if orders else None
            return forms.most_common(1)[0][0], order
        if b.kind in ("class", "function"):
            return rules.producer_form, None
        return None, None
    return rules.form_for(ops, call_args), None


def _module_class_name(trace: RunTrace, path: str) -> str:
    run = trace.modules.get(path)
    return run.cls.__name__ if run else ""


def _torch_public_name(cls: type) -> str | None:
    if not cls.__module__.startswith("torch.nn.modules"):
        return None
    import torch

    return f"torch.nn.{cls.__name__}" if getattr(torch.nn, cls.__name__, None) is cls else None


def _nested_codes(code: CodeType) -> tuple[CodeType, ...]:
    found = []
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found.append(const)
            found.extend(_nested_codes(const))
    return tuple(found)


def _class_codes(cls: type) -> tuple[CodeType, ...]:
    """Code objects of the functions the class itself defines (not inherited), nested functions included."""
    codes = []
    for value in vars(cls).values():
        fn = getattr(value, "__func__", value)
        code = getattr(fn, "__code__", None)
        if isinstance(code, CodeType):
            codes.append(code)
            codes.extend(_nested_codes(code))
    return tuple(codes)


def _scope(file: str, model_file: str) -> str:
    real = os.path.realpath(file) if file else ""
    import torch

    torch_dir = os.path.realpath(os.path.dirname(torch.__file__)) + os.sep
    if real.startswith(torch_dir):
        return "torch"
    if model_file and real == model_file:
        return "model-local"
    if f"{os.sep}diffusers{os.sep}" in real:
        return "diffusers (shared)"
    return "user code"
