"""torch._dynamo, inductor config and freezing: the pieces sdcompile's captures and sessions use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def reset() -> None:
    import torch._dynamo

    torch._dynamo.reset()


def counters():
    """dynamo's counters (`counters["inductor"]["pattern_matcher_count"]`, ...)."""
    from torch._dynamo.utils import counters as shared

    return shared


def current_compile_id() -> str:
    """The id of the compile under way ("0/1"), as dynamo's `Torch-Compiled Region` profiler range spells it; ""
    outside a compile or when this torch does not say."""
    try:
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
    except (ImportError, AttributeError):
        return ""
    return str(compile_id) if compile_id is not None else ""


def list_backends() -> list[str]:
    import torch._dynamo

    return list(torch._dynamo.list_backends())


def detect_fake_mode(values):
    from torch._dynamo.utils import detect_fake_mode as detect

    return detect(values)


def python_dispatcher():
    from torch._dispatch.python import enable_python_dispatcher

    return enable_python_dispatcher()


def aot_autograd(**kwargs):
    from torch._dynamo.backends.common import aot_autograd as aot

    return aot(**kwargs)


def freeze(dynamo_gm, aot_gm, example_inputs):
    """inductor's freeze(): (frozen graph, indices of the inputs it keeps)."""
    from torch._inductor.freezing import freeze as inductor_freeze

    return inductor_freeze(dynamo_gm, aot_gm, example_inputs)


def tracing_params_flat() -> list:
    """The current TracingContext's params_flat (parameters dynamo kept as module attributes), or []."""
    import torch._guards

    tracing = torch._guards.TracingContext.try_get()
    return list(getattr(tracing, "params_flat", None) or []) if tracing is not None else []


@contextmanager
def capture_config(prepare_freezing: bool) -> Iterator[None]:
    """dynamo's prepare_freezing as MindieSDBackend sets it, and no CPU weight prepacking (so frozen weights stay
    the tensors the model holds). No collection after the compile: a capture runs with the cyclic collector off, so
    dynamo's `gc.collect(1)` would walk everything the compile allocated (a tenth of a zoo model's capture); the
    collector runs when the caller turns it back on. No work done only for logs that are off (below). The
    settings change no graph."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    settings = {"prepare_freezing": prepare_freezing}
    if hasattr(dynamo_config, "run_gc_after_compile"):  # torch >= 2.8
        settings["run_gc_after_compile"] = False
    with dynamo_config.patch(settings), inductor_config.patch({"cpp.weight_prepack": False}), \
            no_unlogged_probes():
        yield


@contextmanager
def no_unlogged_probes() -> Iterator[None]:
    """Two things dynamo does for every graph only to log them, logged or not (torch 2.9-2.13), left out while
    their log is off: the "file:line in fn (qualified name)" header of every call put in a graph, whose name it
    finds by tokenizing the whole source file (`trace_call`; a tenth of a large model's capture), and a probe of
    guard latency that first flushes the CPU cache (`guards`; 20 ms a graph, half a second on a model that graph
    breaks into twenty). Neither changes a graph or a guard; the compile metric `guard_latency_us` reads 0."""
    try:
        import torch._dynamo.guards as guards
        import torch._dynamo.symbolic_convert as symbolic_convert
        from torch._logging._internal import log_state
    except ImportError:  # pragma: no cover - another torch layout: nothing to skip
        yield
        return
    skipped = [(module, name, stand_in) for module, name, stand_in, log in (
        (symbolic_convert, "get_funcname", _no_name, "trace_call"),
        (guards, "profile_guard_manager", _no_latency, "guards"),
    ) if hasattr(module, name) and not log_state.is_artifact_enabled(log)]
    kept = [getattr(module, name) for module, name, _ in skipped]
    for module, name, stand_in in skipped:
        setattr(module, name, stand_in)
    try:
        yield
    finally:
        for (module, name, _), original in zip(skipped, kept, strict=True):
            setattr(module, name, original)


def _no_name(filename: str, lineno: int) -> None:
    return None


def _no_latency(*args, **kwargs) -> float:
    return 0.0


@contextmanager
def outside_tracing() -> Iterator[None]:
    """Real tensor execution from inside a compiler callback: the fake-tensor and other dispatch modes the backend
    runs under are switched off for the block (the same helper on torch 2.7-2.13)."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        yield


def fake_call(packet, args: tuple, kwargs: dict):
    """What `packet` (an op overload) returns for these arguments, shapes and dtypes only: its fake kernel run under a
    FakeTensorMode that takes the real tensors as they are."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True):
        return packet(*args, **kwargs)


def untraced_counts() -> dict[str, int]:
    """Why dynamo gave up tracing, so far in this process (`counters["unimplemented"]`: reason -> times); a
    caller diffs two readings."""
    return dict(counters()["unimplemented"])


def graph_end(gm) -> tuple[str, bool, tuple] | None:
    """Why dynamo ended the graph it handed the backend (`gm.compile_subgraph_reason`, torch 2.0-2.13): (its
    reason, whether that is a graph break, the user frames it stopped at, innermost last); None where unsaid."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is None:
        return None
    return (str(getattr(reason, "reason", "")), bool(getattr(reason, "graph_break", True)),
            tuple(getattr(reason, "user_stack", None) or ()))


@contextmanager
def graph_break_warnings_held() -> Iterator[None]:
    """torch's own graph-break warnings (Tensor.item()'s hint, a dozen lines once per process) kept off the
    terminal while the block compiles: the caller reports every break itself, with its line. Other warnings pass."""
    import logging

    class _HoldGraphBreaks(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return not str(record.msg).lstrip().startswith("Graph break")

    held = _HoldGraphBreaks()
    handlers = {h for name in ("torch", "torch._dynamo") for h in logging.getLogger(name).handlers}
    for handler in handlers:
        handler.addFilter(held)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(held)
