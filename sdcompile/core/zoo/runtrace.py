"""One eager forward, recorded: which modules ran, which torch functions each piece of Python code called, which
model tensors it read, where `x * (1 + scale) + shift` was computed and where a tensor was rotated by tables.

A TorchFunctionMode sees every torch-level call (`F.rms_norm`, `x * w`, `torch.rsqrt`, `torch_npu.npu_rms_norm`
under the emulated NPU) — not their internals, because the mode is off while a call runs. Each call is
attributed to the innermost frame outside torch's internals (module forwards in `torch/nn/modules` count as
code), and to a site: the model submodule whose method that frame is, else the innermost submodule running.

Tensor provenance is followed by identity through chunk/split/unbind pieces and view-like ops, which is how a
modulation's scale and shift are traced back to `chunk(6)[1]` and `chunk(6)[0]` (provenance.py).
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from sdcompile.core.zoo.models import quiet_model_warnings
from sdcompile.core.zoo.primitives import normalize_op
from sdcompile.core.zoo.provenance import Call, ModulationEvent, Prov, Provenance
from sdcompile.core.zoo.rotation import RotationEvent, Rotations

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
    activation: int = 0  # which run of its frame's function made the call (1, 2, ...: q's RoPE, then k's)


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
    rotations: tuple[RotationEvent, ...]
    tensors: dict[str, tuple[str, Any]]  # fqn -> (kind, tensor): the model's parameters, buffers, tensor attrs
    lines: dict[CodeType, frozenset[int]]  # the lines each piece of model code executed (torch internals excluded)
    seconds: float
    output: Any = field(default=None, repr=False)


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
        self.provenance = Provenance(torch.Tensor)
        self.rotations = Rotations(torch.Tensor)
        self.frames: dict[tuple[CodeType, int], FrameInfo] = {}
        self.internal: dict[CodeType, bool] = {}
        # id(frame) -> its activation number, while the frame runs (an id is unique among live frames)
        self.live: dict[int, int] = {}
        self.activations = 0
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
        if isinstance(first, self.torch.Tensor) and id(first) not in self.provenance.prov:
            self.provenance.tag(first, Prov("module_out", x_from=type(module).__name__,
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
        self.calls.append(TorchCall(index, op, raw, info, line, site, read, simple, self.live.get(id(frame), 0)))
        call = Call(op, raw, args, result, flat, info, site, line, index)
        self.provenance.follow(call)
        self.rotations.follow(call)


def trace_forward(module, inputs: dict[str, Any]) -> RunTrace:
    """Run `module(**inputs)` once under no_grad and record it (see the module docstring)."""
    import torch
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.overrides import TorchFunctionMode

    recorder = _Recorder(module)
    for _kind, name, tensor in recorder.tensors.values():
        recorder.provenance.prov[id(tensor)] = Prov("param", text=name)

    class _Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if torch.compiler.is_compiling():
                # torch compiling part of the forward itself (flex_attention's eager path compiles its kernel):
                # dynamo traces this mode too and must not meet the recorder's frame inspection; the compiled code's
                # ops are recorded when they run
                return func(*args, **kwargs)
            result = func(*args, **kwargs)
            if getattr(func, "__name__", "") != "__get__":
                recorder.record(func, args, kwargs, result)
            return result

    executed: dict[CodeType, set[int]] = {}

    def trace_lines(frame, event, arg):
        lines = executed.setdefault(frame.f_code, set())
        lines.add(frame.f_lineno)
        recorder.activations += 1
        recorder.live[id(frame)] = recorder.activations

        def local(frame, event, arg):
            if event == "line":
                lines.add(frame.f_lineno)
            elif event == "return":
                recorder.live.pop(id(frame), None)
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
    modulations = tuple(recorder.provenance.modulations)
    rotations = tuple(recorder.rotations.events)
    return RunTrace(modules, tuple(recorder.calls), modulations, rotations, tensors, lines, seconds, output)
