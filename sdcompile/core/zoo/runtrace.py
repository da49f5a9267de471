"""One eager forward, recorded: which modules ran, which torch functions each piece of Python code called, which
model tensors it read, and where `x * (1 + scale) + shift` was computed.

A TorchFunctionMode sees every torch-level call (`F.rms_norm`, `x * w`, `torch.rsqrt`, `torch_npu.npu_rms_norm`
under the emulated NPU) — not their internals, because the mode is off while a call runs. Each call is
attributed to the innermost frame outside torch's internals (module forwards in `torch/nn/modules` count as
code), and to a site: the model submodule whose method that frame is, else the innermost submodule running.

Tensor provenance is followed by identity through chunk/split/unbind pieces and view-like ops, which is how a
modulation's scale and shift are traced back to `chunk(6)[1]` and `chunk(6)[0]`.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from sdcompile.core.zoo.primitives import normalize_op

_PIECE_OPS = {"chunk", "split", "unbind", "tensorsplit", "splitwithsizes"}
_PASSTHROUGH_OPS = {
    "getitem", "unsqueeze", "squeeze", "view", "reshape", "to", "float", "half", "bfloat16", "typeas", "expand",
    "contiguous", "flatten", "unflatten", "permute", "transpose", "clone", "select", "type", "expandas",
}
_SIMPLE_KWARGS = ("approximate", "dim", "eps", "epsilon")


@dataclass(frozen=True)
class FrameInfo:
    code: CodeType
    qualname: str  # "FluxAttnProcessor.__call__", "WanAttnProcessor.__call__.<locals>.apply_rotary_emb"
    file: str
    module_name: str  # the defining Python module: "diffusers.models.embeddings"
    self_class: type | None  # the nn.Module class when the frame is a method of a model submodule

    @property
    def name(self) -> str:
        return self.code.co_name


@dataclass(frozen=True)
class TorchCall:
    index: int
    op: str  # normalised op name ("mul", "rsqrt", "viewascomplex", "npurmsnorm")
    raw: str  # the function's own name ("__rmul__", "view_as_complex")
    frame: FrameInfo
    line: int
    site: str  # model submodule path ("" = the model itself)
    tensors_read: tuple[str, ...]  # model parameters/buffers/tensor attributes passed to the call
    kwargs: tuple[tuple[str, Any], ...]  # simple keyword values (approximate="tanh", dim=-1, ...)


@dataclass(frozen=True)
class Piece:
    """One output of a chunk/split/unbind call."""

    op: str  # "chunk"
    index: int
    count: int
    source: str  # what was split: "output of transformer_blocks.0.norm1.linear (Linear)", "scale_shift_table + ..."
    call: int  # index of the splitting call


@dataclass(frozen=True)
class ModulationEvent:
    frame: FrameInfo
    site: str
    lines: tuple[int, ...]  # the lines of the `1 + scale`, the multiply and the add
    scale: Piece | None
    shift: Piece | None
    normalized_by: str | None  # what produced x: "LayerNorm", "FP32LayerNorm", "layer_norm", ...
    with_shift: bool = True  # False: x * (1 + scale) with no shift added

    def form(self) -> str:
        def name(p: Piece | None, fallback: str) -> str:
            return f"{p.op}({p.count})[{p.index}]" if p else fallback

        base = f"x * (1 + {name(self.scale, 'scale')})"
        if self.with_shift:
            base += f" + {name(self.shift, 'shift')}"
        if self.normalized_by:
            base = base.replace("x *", f"{self.normalized_by}(x) *", 1)
        return base

    def order(self) -> str | None:
        """"shift, scale" or "scale, shift": which the split hands out first (None when not both split)."""
        if self.scale is None or self.shift is None or self.scale.call != self.shift.call:
            return None
        return "shift, scale" if self.shift.index < self.scale.index else "scale, shift"


@dataclass(frozen=True)
class ModuleRun:
    path: str
    cls: type
    calls: int
    called_children: bool  # a model submodule ran inside this one's forward


@dataclass(frozen=True)
class RunTrace:
    modules: dict[str, ModuleRun]
    calls: tuple[TorchCall, ...]
    modulations: tuple[ModulationEvent, ...]
    tensors: dict[str, tuple[str, Any]]  # fqn -> (kind, tensor): the model's parameters, buffers, tensor attrs
    lines: dict[CodeType, frozenset[int]]  # the lines each piece of model code executed (torch internals excluded)
    seconds: float
    output: Any = field(default=None, repr=False)

    def ops_by_frame(self) -> dict[tuple[CodeType, str], Counter]:
        """(code, site) -> Counter of ops that frame called directly."""
        found: dict[tuple[CodeType, str], Counter] = {}
        for call in self.calls:
            found.setdefault((call.frame.code, call.site), Counter())[call.op] += 1
        return found


@dataclass
class _Prov:
    kind: str  # "piece" | "one_plus" | "scaled" | "module_out" | "param_mix"
    piece: Piece | None = None
    scale: Piece | None = None
    x_from: str | None = None
    line: int = 0
    lines: tuple[int, ...] = ()
    text: str = ""
    event: int | None = None  # index of the modulation event a "scaled" value started


def model_tensors(module) -> dict[int, tuple[str, str, Any]]:
    """id -> (kind, dotted name, tensor) for parameters, buffers and plain tensor attributes of submodules."""
    import torch

    found: dict[int, tuple[str, str, Any]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        found.setdefault(id(p), ("parameter", name, p))
    for name, b in module.named_buffers(remove_duplicate=False):
        found.setdefault(id(b), ("buffer", name, b))
    for owner_name, owner in module.named_modules():
        for attr, value in vars(owner).items():
            if isinstance(value, torch.Tensor) and id(value) not in found:
                found[id(value)] = ("tensor attribute", f"{owner_name}.{attr}" if owner_name else attr, value)
    return found


class _Recorder:
    def __init__(self, module):
        import torch

        self.torch = torch
        self.paths = {id(m): (name, m) for name, m in module.named_modules()}
        self.tensors = model_tensors(module)
        self.stack: list[str] = []
        self.module_calls: Counter = Counter()
        self.module_cls: dict[str, type] = {}
        self.with_children: set[str] = set()
        self.calls: list[TorchCall] = []
        self.modulations: list[ModulationEvent] = []
        self.prov: dict[int, _Prov] = {}
        self.keep_alive: list[Any] = []  # provenance is keyed by id(): the tensors must outlive the run
        self.frames: dict[tuple[CodeType, int], FrameInfo] = {}
        self.internal: dict[CodeType, bool] = {}
        torch_dir = os.path.dirname(torch.__file__) + os.sep
        self.torch_dir = torch_dir
        self.torch_modules_dir = os.path.join(torch_dir, "nn", "modules") + os.sep
        self.own_file = __file__

    # ------------------------------------------------------------------------------ module stack (hooks)
    def pre_hook(self, module, args):
        entry = self.paths.get(id(module))
        if entry is None:
            return
        path = entry[0]
        if self.stack:
            self.with_children.add(self.stack[-1])
        self.stack.append(path)
        self.module_calls[path] += 1
        self.module_cls[path] = type(module)

    def post_hook(self, module, args, output):
        entry = self.paths.get(id(module))
        if entry is None or not self.stack or self.stack[-1] != entry[0]:
            return
        self.stack.pop()
        first = output[0] if isinstance(output, (tuple, list)) and output else output
        if isinstance(first, self.torch.Tensor) and id(first) not in self.prov:
            self._tag(first, _Prov("module_out", x_from=type(module).__name__,
                                   text=f"output of {entry[0] or 'the model'} ({type(module).__name__})"))

    # ------------------------------------------------------------------------------------- torch calls
    def _is_internal(self, code: CodeType) -> bool:
        known = self.internal.get(code)
        if known is None:
            file = code.co_filename
            known = file == self.own_file or (file.startswith(self.torch_dir)
                                              and not file.startswith(self.torch_modules_dir))
            self.internal[code] = known
        return known

    def _frame(self):
        frame = sys._getframe(2)
        while frame is not None and self._is_internal(frame.f_code):
            frame = frame.f_back
        return frame

    def _frame_info(self, frame) -> tuple[FrameInfo, str]:
        code = frame.f_code
        owner = frame.f_locals.get("self") if code.co_varnames[:1] == ("self",) else None
        entry = self.paths.get(id(owner)) if owner is not None else None
        key = (code, id(entry[1]) if entry else 0)
        info = self.frames.get(key)
        if info is None:
            info = FrameInfo(
                code=code,
                qualname=getattr(code, "co_qualname", code.co_name),
                file=code.co_filename,
                module_name=frame.f_globals.get("__name__", ""),
                self_class=type(entry[1]) if entry else None,
            )
            self.frames[key] = info
        site = entry[0] if entry else (self.stack[-1] if self.stack else "")
        return info, site

    def _tag(self, tensor, prov: _Prov) -> None:
        self.prov[id(tensor)] = prov
        self.keep_alive.append(tensor)

    def record(self, func, args, kwargs, result) -> None:
        raw = getattr(func, "__name__", None) or str(func)
        op = normalize_op(raw)
        frame = self._frame()
        if frame is None:
            return
        info, site = self._frame_info(frame)
        line = frame.f_lineno
        Tensor = self.torch.Tensor
        flat = [a for a in args if isinstance(a, Tensor)]
        for a in args:
            if isinstance(a, (list, tuple)):
                flat.extend(x for x in a if isinstance(x, Tensor))
        flat.extend(v for v in kwargs.values() if isinstance(v, Tensor))
        read = tuple(self.tensors[id(t)][1] for t in flat if id(t) in self.tensors)
        simple = tuple(
            (k, kwargs[k]) for k in _SIMPLE_KWARGS if k in kwargs and isinstance(kwargs[k], (str, int, float))
        )
        index = len(self.calls)
        self.calls.append(TorchCall(index, op, raw, info, line, site, read, simple))
        self._follow(op, raw, args, result, flat, info, site, line, index)

    # ------------------------------------------------------------------------------ provenance rules
    def _follow(self, op, raw, args, result, flat, info, site, line, index) -> None:
        Tensor = self.torch.Tensor
        if op in _PIECE_OPS and flat and isinstance(result, (tuple, list)):
            source = self.prov.get(id(flat[0]))
            text = source.text if source and source.text else "a computed tensor"
            pieces = [r for r in result if isinstance(r, Tensor)]
            for i, piece in enumerate(pieces):
                self._tag(piece, _Prov("piece", piece=Piece(op, i, len(pieces), text, index)))
            return
        if not isinstance(result, Tensor):
            return
        if op == "getitem" and len(args) == 2 and isinstance(args[0], Tensor):
            piece = self._indexed_piece(args[0], args[1], index)
            if piece is not None:
                self._tag(result, _Prov("piece", piece=piece))
                return
        if op in _PASSTHROUGH_OPS and args and isinstance(args[0], Tensor):
            inherited = self.prov.get(id(args[0]))
            if inherited is not None:
                self._tag(result, inherited)
            return
        if op == "add":
            numbers = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
            if len(flat) == 1 and numbers == [1]:
                src = self.prov.get(id(flat[0]))
                self._tag(result, _Prov("one_plus", scale=src.piece if src is not None else None, line=line))
                return
            if len(flat) == 2:
                for scaled, other in ((flat[0], flat[1]), (flat[1], flat[0])):
                    p = self.prov.get(id(scaled))
                    if p is not None and p.kind == "scaled":
                        shift = self.prov.get(id(other))
                        self._modulation(info, site, p, shift.piece if shift and shift.kind == "piece" else None,
                                         line, with_shift=True)
                        return
        if op == "mul" and len(flat) == 2:
            for one_plus, x in ((flat[0], flat[1]), (flat[1], flat[0])):
                p = self.prov.get(id(one_plus))
                if p is not None and p.kind == "one_plus":
                    xp = self.prov.get(id(x))
                    scaled = _Prov("scaled", scale=p.scale, x_from=xp.x_from if xp else None, lines=(p.line, line))
                    if scaled.x_from and "norm" in scaled.x_from.lower():
                        # a normalised input times (1 + scale) is AdaLN even when no shift follows (Z-Image)
                        scaled.event = self._modulation(info, site, scaled, None, line, with_shift=False)
                    self._tag(result, scaled)
                    return
        if op in ("layernorm", "rmsnorm", "groupnorm", "npurmsnorm"):
            self._tag(result, _Prov("module_out", x_from=raw, text=f"{raw} output"))
            return
        if op == "add":
            # e.g. (scale_shift_table[None] + temb): the modulation table mixed with the conditioning
            tables = [p.text for p in (self.prov.get(id(t)) for t in flat) if p is not None and p.kind == "param"]
            if tables:
                self._tag(result, _Prov("param_mix", text=f"{' + '.join(tables)} + the conditioning"))

    def _indexed_piece(self, tensor, key, call: int) -> Piece | None:
        """`t[:, :, 0]` of a split-like tensor (a modulation table mixed with the conditioning, a module
        output): the piece `index(n)[0]` along that dimension."""
        source = self.prov.get(id(tensor))
        if source is None or source.kind not in ("param_mix", "module_out"):
            return None
        parts = key if isinstance(key, tuple) else (key,)
        if any(p is Ellipsis or p is None for p in parts):
            return None
        ints = [(dim, p) for dim, p in enumerate(parts) if isinstance(p, int) and not isinstance(p, bool)]
        if len(ints) != 1 or not all(isinstance(p, (int, slice)) for p in parts):
            return None
        dim, index = ints[0]
        count = tensor.shape[dim]
        return Piece("index", index % count, count, source.text, -1 - dim)

    def _modulation(self, info, site, scaled: _Prov, shift: Piece | None, line: int, with_shift: bool) -> int:
        lines = tuple(sorted(set(scaled.lines + (line,))))
        event = ModulationEvent(info, site, lines, scaled.scale, shift, scaled.x_from, with_shift)
        if with_shift and scaled.event is not None:  # the scale-only event recorded at the multiply, completed
            self.modulations[scaled.event] = event
            return scaled.event
        self.modulations.append(event)
        return len(self.modulations) - 1


def trace_forward(module, inputs: dict[str, Any]) -> RunTrace:
    """Run `module(**inputs)` once under no_grad and record it (see the module docstring)."""
    import torch
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.overrides import TorchFunctionMode

    from sdcompile.core.zoo.models import quiet_model_warnings

    recorder = _Recorder(module)
    for _kind, name, tensor in recorder.tensors.values():
        recorder.prov[id(tensor)] = _Prov("param", text=name)

    class _Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            if getattr(func, "__name__", "") != "__get__":
                recorder.record(func, args, kwargs, result)
            return result

    executed: dict[CodeType, set[int]] = {}

    def trace_lines(frame, event, arg):
        lines = executed.setdefault(frame.f_code, set())
        lines.add(frame.f_lineno)

        def local(frame, event, arg):
            if event == "line":
                lines.add(frame.f_lineno)
            return local

        return local

    def trace_calls(frame, event, arg):
        # line events only for model code: torch's internals would multiply the cost for nothing
        return None if recorder._is_internal(frame.f_code) else trace_lines(frame, event, arg)

    pre = register_module_forward_pre_hook(recorder.pre_hook)
    post = register_module_forward_hook(recorder.post_hook, always_call=True)
    previous_trace = sys.gettrace()
    started = time.perf_counter()
    try:
        with quiet_model_warnings(), torch.no_grad(), _Mode():
            sys.settrace(trace_calls)
            try:
                output = module(**inputs)
            except SystemExit as exc:  # left alone, the model ending the process with 0 would pass a CI gate
                raise RuntimeError(f"the forward called sys.exit({exc.code!r}), which a model must not do") from None
            finally:
                sys.settrace(previous_trace)
    finally:
        pre.remove()
        post.remove()
    seconds = time.perf_counter() - started
    modules = {
        path: ModuleRun(path, recorder.module_cls[path], count, path in recorder.with_children)
        for path, count in recorder.module_calls.items()
    }
    tensors = {name: (kind, t) for kind, name, t in recorder.tensors.values()}
    lines = {code: frozenset(found) for code, found in executed.items()}
    return RunTrace(modules, tuple(recorder.calls), tuple(recorder.modulations), tensors, lines, seconds, output)
