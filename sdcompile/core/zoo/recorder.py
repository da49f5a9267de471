"""Recording a transformer's forward where the real pipeline runs, for `--model-capture` to replay anywhere.

    import sdcompile
    with sdcompile.capture("flux.sdcap"):          # the first diffusers transformer forward inside the block
        pipe(prompt, num_inference_steps=2)
    with sdcompile.capture("mine.sdcap", module=pipe.transformer, calls=2, stop=True):
        pipe(prompt)                               # stops the pipeline once two forwards are recorded

While active, `torch.nn.Module.__call__` is wrapped (restored when the block ends or enough calls are recorded):
a call of a transformer class — one from `diffusers.models.transformers`, a subclass of one, or `module` — that is
not inside another recorded call has its arguments bound to `forward`'s names, its tensors copied to the CPU, and
its class and config kept. The file is written when the block ends (capture_file.py has its format). Record the
model before `torch.compile` wraps it: a compiled forward is traced, not called.

This module imports only the standard library and torch: `sdcompile capture -- python infer.py` loads it into the
pipeline's own interpreter (capture_bootstrap/).
"""

from __future__ import annotations

import inspect
import os
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sdcompile.core.zoo import capture_file

OUT_ENV = "SDCOMPILE_CAPTURE_OUT"
CALLS_ENV = "SDCOMPILE_CAPTURE_CALLS"
STOP_ENV = "SDCOMPILE_CAPTURE_STOP"
TRANSFORMERS_PACKAGE = "diffusers.models.transformers."


class CaptureDone(BaseException):  # noqa: N818 - not an error: it unwinds the pipeline once the capture is complete
    """Raised inside the pipeline (stop=True) once the capture is written; the block swallows it."""


class CaptureError(RuntimeError):
    """The block ended with no transformer forward recorded, or a recorded model cannot be replayed."""


class Recorder:
    def __init__(self, path: Path, module=None, calls: int = 1, stop: bool = False):
        if calls < 1:
            raise ValueError("calls must be 1 or more")
        self.path, self.module, self.wanted, self.stop = Path(path), module, calls, stop
        self.calls: list[dict[str, Any]] = []
        self.left_out: dict[str, str] = {}
        self.model = None
        self.device = ""  # where the first recorded tensor lived ("npu:0")
        self.exit_when_done = False  # `sdcompile capture`: end the process once written (no block to unwind to)
        self.written = False
        self._inside = False
        self._original = None

    # ---------------------------------------------------------------------------------------------- the hook
    def install(self) -> None:
        import torch

        recorder, original = self, torch.nn.Module.__call__
        self._original = original

        def call(module, *args, **kwargs):
            if recorder._inside or not recorder._wanted(module):
                return original(module, *args, **kwargs)
            recorder._record(module, args, kwargs)
            recorder._inside = True
            try:
                result = original(module, *args, **kwargs)
            finally:
                recorder._inside = False
            if len(recorder.calls) >= recorder.wanted:
                recorder.finish()
                if recorder.stop:
                    recorder.end()
            return result

        torch.nn.Module.__call__ = call

    def end(self) -> None:
        """Stop the pipeline now that the capture is written."""
        if not self.exit_when_done:
            raise CaptureDone()
        import sys

        print(f"sdcompile capture: recorded {len(self.calls)} forward call(s); stopping the program (its remaining "
              "steps are not needed)", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(0)

    def uninstall(self) -> None:
        if self._original is not None:
            import torch

            torch.nn.Module.__call__ = self._original
            self._original = None

    def _wanted(self, module) -> bool:
        if self.model is not None:
            return module is self.model
        if self.module is not None:
            return module is self.module
        return is_transformer(type(module))

    def _record(self, module, args, kwargs) -> None:
        self.model = module
        try:
            bound = inspect.signature(module.forward).bind(*args, **kwargs)
        except TypeError:  # the call itself will raise: let it, with nothing recorded
            return
        arguments = {}
        if not self.device:
            self.device = next((str(v.device) for v in bound.arguments.values() if hasattr(v, "device")), "")
        for name, value in bound.arguments.items():
            kept = _portable(value)
            if kept is _UNPORTABLE:
                self.left_out[name] = type(value).__name__
            else:
                arguments[name] = kept
        self.calls.append(arguments)

    # --------------------------------------------------------------------------------------------- the file
    def finish(self) -> None:
        """Write the file (once) and put Module.__call__ back."""
        self.uninstall()
        if self.written or not self.calls:
            return
        import torch

        cls = type(self.model)
        config = getattr(self.model, "config", None)
        if config is None:
            raise CaptureError(f"{cls.__qualname__} has no diffusers config: it cannot be rebuilt elsewhere (capture "
                               "a diffusers ModelMixin, or write a factory for --model-file)")
        fields = {k: v for k, v in dict(config).items() if not k.startswith("_")}  # not diffusers' own bookkeeping
        capture_file.write(self.path, cls.__module__, cls.__qualname__, fields, self.calls, _versions(torch),
                           self.device, _now(), self.left_out)
        self.written = True


_UNPORTABLE = object()


def _portable(value: Any) -> Any:
    """`value` as torch.load(weights_only=True) reads it back (tensors on the CPU), else _UNPORTABLE."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_portable(v) for v in value]
        return _UNPORTABLE if any(i is _UNPORTABLE for i in items) else type(value)(items)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items = {k: _portable(v) for k, v in value.items()}
        return _UNPORTABLE if any(i is _UNPORTABLE for i in items.values()) else items
    return _UNPORTABLE


def is_transformer(cls) -> bool:
    """A diffusers transformer class, or a subclass of one."""
    return any(c.__module__.startswith(TRANSFORMERS_PACKAGE) for c in cls.__mro__)


def _versions(torch) -> dict[str, str | None]:
    import importlib.metadata
    import sys

    out: dict[str, str | None] = {"torch": torch.__version__}
    for dist in ("diffusers", "torch_npu", "sdcompile"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    out["python"] = sys.version.split()[0]
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@contextmanager
def capture(path: str | os.PathLike, module=None, calls: int = 1, stop: bool = False):
    """Record the first `calls` forwards of `module` (else the first diffusers transformer called) into `path`;
    `stop`: end the block once they are recorded (the pipeline's remaining steps do not run). Yields the Recorder
    (`.calls`, `.left_out`: arguments that could not be kept, by type)."""
    recorder = Recorder(Path(path), module, calls, stop)
    recorder.install()
    try:
        yield recorder
    except CaptureDone:
        pass
    finally:
        recorder.uninstall()
    recorder.finish()
    if not recorder.written:
        raise CaptureError("no transformer forward ran inside the capture block: pass module=pipe.transformer, or "
                           "call the pipeline inside the block (before torch.compile wraps the model)")


def start_from_environment() -> Recorder | None:
    """For `sdcompile capture -- python ...`: record as $SDCOMPILE_CAPTURE_OUT says once the program imports torch
    (an interpreter that never does, such as a helper script, is left alone), writing the file when enough calls are
    recorded or when the interpreter exits."""
    import sys

    out = os.environ.get(OUT_ENV)
    if not out:
        return None
    import atexit

    recorder = Recorder(Path(out), None, int(os.environ.get(CALLS_ENV, "1")), os.environ.get(STOP_ENV) == "1")
    recorder.exit_when_done = True
    atexit.register(recorder.finish)
    if "torch" in sys.modules:
        recorder.install()
    else:
        sys.meta_path.insert(0, _AfterImport("torch", recorder.install))
    return recorder


class _AfterImport:
    """A meta path finder that runs `then` once module `name` has been imported (and then steps aside)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        import importlib.util
        import sys

        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module, then = spec.loader.exec_module, self.then

        def exec_then(module):
            exec_module(module)
            then()

        spec.loader.exec_module = exec_then
        return spec
