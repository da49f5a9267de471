"""The one model step every phase takes: what to build (a ModelRequest, resolved once), the model built, and its
first forward, run under one error policy: user code that raises is exit 2 naming the model and the stage.

    request = ModelRequest(model="flux", dtype="bf16")          # or model_file="mine.py:build", build=ModelBuild(...)
    request.spec                                                # resolved once; BadInput before anything heavy
    built, trace = first_forward(request, trace_forward)        # analyze, scaffold: the recorded forward
    built, _ = first_forward(request)                           # every other phase: a plain forward
    with user_code(built, "compiled forward"): ...              # a later forward whose failure is the model's

A phase runs the model eagerly first, so a compiled forward that fails afterwards is the compile's failure (the
tree's, a group's, a kernel's), never read as the model's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from sdcompile.core.zoo.models import build_model, resolve_model
from sdcompile.core.zoo.raised_at import first_line, model_frame, raising_line
from sdcompile.util.errors import BadInput, SdcompileError

if TYPE_CHECKING:
    from sdcompile.core.zoo.build_options import ModelBuild
    from sdcompile.core.zoo.models import BuiltModel, ModelSpec

T = TypeVar("T")

FIX = "check the model and the kwargs its factory returns (they are passed as module(**kwargs))"


class ModelRaised(BadInput):
    """The user's model raised in one of its forwards (exit 2): the message names the model and the stage."""

    def __init__(self, label: str, stage: str, exc: BaseException):
        if isinstance(exc, SystemExit):
            what = f"called sys.exit({exc.code!r}) at {raising_line(exc)}, which a model must not do"
            fix = "a model must return, not end the process; remove the call"
        else:
            where = model_frame(exc)
            what = f"raised {type(exc).__name__}: {first_line(exc)}" + (f" ({where})" if where else "")
            fix = FIX
        super().__init__(f"{label}: the model's {stage} {what}", fix)
        self.stage = stage


@dataclass(frozen=True)
class ModelRequest:
    """What a command was asked to build: --model, --model-file or a build's capture/config, a dtype, a timeout
    (seconds the build and each forward may take; None: $SDCOMPILE_TIMEOUT, else 600; 0: none)."""

    model: str | None = None
    model_file: str | None = None
    build: ModelBuild | None = None
    dtype: str = "bf16"
    timeout: float | None = None

    @cached_property
    def spec(self) -> ModelSpec:
        return resolve_model(self.model, self.model_file, self.build)

    def pattern_word(self, name: str | None) -> str:
        """The <model> word of a generated pattern's names (enable_<model>_<op>): `name`, else the model's; a model
        file has no name of its own, so it needs --name."""
        if name:
            return name
        if self.spec.kind == "file":
            raise BadInput("--model-file needs --name: the <model> word of the pattern's names (enable_<model>_<op>)",
                           "pass e.g. --name mymodel")
        return self.spec.name

    def with_dtype(self, dtype: str) -> ModelRequest:
        from dataclasses import replace

        same = replace(self, dtype=dtype)
        same.__dict__["spec"] = self.spec  # resolved once, whatever the dtype
        return same


@contextmanager
def user_code(built: BuiltModel, stage: str = "forward") -> Iterator[None]:
    """The body runs the user's model: past its deadline TimedOut, and whatever it raises ModelRaised naming
    `built` and `stage` (exit 2). sdcompile's own errors pass through as they are."""
    with built.forward_deadline(stage):
        try:
            yield
        except SdcompileError:
            raise
        except (Exception, SystemExit) as exc:
            raise ModelRaised(built.label, stage, exc) from exc


def plain_forward(module: Any, inputs: dict[str, Any]) -> Any:
    import torch

    with torch.no_grad():
        return module(**inputs)


def first_forward(request: ModelRequest, forward: Callable[[Any, dict[str, Any]], T] | None = None
                  ) -> tuple[BuiltModel, T]:
    """The model built and `forward(module, inputs)` run once (a plain forward by default). When an instrumented
    `forward` fails, the plain forward decides whose failure it is: if that runs, the instrument is at fault (an
    internal error naming it), never the user's model."""

    built = build_model(request.spec, request.dtype, timeout=request.timeout)
    run = forward or plain_forward
    with built.forward_deadline("forward"):
        try:
            return built, run(built.module, built.inputs)
        except SdcompileError:
            raise
        except (Exception, SystemExit) as exc:
            failure = exc
    plain_failure = _plain_failure(built) if forward is not None else failure
    if plain_failure is None:
        raise RuntimeError(f"sdcompile's instrumented forward ({getattr(forward, '__name__', forward)}) failed on "
                           f"{built.label}, whose plain forward runs: {type(failure).__name__}: "
                           f"{first_line(failure)}"
                           ) from failure
    raise ModelRaised(built.label, "forward", plain_failure) from plain_failure


def _plain_failure(built: BuiltModel) -> BaseException | None:
    """What the model's plain forward raises (None: it runs)."""
    with built.forward_deadline("forward"):
        try:
            plain_forward(built.module, built.inputs)
        except (Exception, SystemExit) as exc:
            return exc
    return None
