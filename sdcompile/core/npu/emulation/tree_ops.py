"""The tree's Python fused ops in this process's runs: each call goes through the tree's own function on its NPU
branch (its Triton kernel under the interpreter, triton_runtime.py), with what the interpreter cannot do made up for.

    guard_tree_ops(ops)   route each op defined by the tree (`npu_branch` in catalogs/fused_ops.toml) through a
                          guard: bf16 operands computed in float32 (numpy has no bf16), a kernel the interpreter
                          cannot run taking the tree's fallback (said in `gaps()`), the tree's prints kept off
                          stdout, and inside `triton_runtime.recording()` each call counted with whether it launched
                          a kernel (integrate's count contract)
    tree_fallback()       a block in which the ops compute their meaning (the torch fallback): for references
    run_widened(...)      one call with bf16 operands in float32 (the NPU branch, or the reference)
"""

from __future__ import annotations

import contextlib
import io
import threading

from sdcompile.core.npu.emulation.triton_runtime import current_recording, interpreter_gap, quiet

_state = threading.local()

_gaps: dict[str, str] = {}  # op -> why its calls ran the tree's fallback instead (first occurrence)


def guard_tree_ops(ops) -> None:
    """Route each Python-defined fused op (FusedOp with `npu_branch`) through the tree's own function, so that a call
    the interpreter cannot run (a Triton feature it lacks) takes the tree's torch fallback instead of failing the
    model, and says so (`gaps()`); bf16 operands are computed in float32 (`run_widened`). The kernel's own errors
    still raise, as on the NPU. Each import of the tree defines its ops anew, so each definition is guarded."""
    import sys

    for op in ops:
        definition = getattr(sys.modules.get(op.tree_module), op.op_name, None)
        if not op.npu_branch or definition is None or getattr(definition, "sdcompile_guarded", False):
            continue
        try:
            definition.register_kernel("cpu")(_guarded_call(op))
        except Exception:  # noqa: BLE001 - an op this torch cannot re-route keeps the tree's own dispatch
            continue
        definition.sdcompile_guarded = True


def widened(args: tuple, kwargs: dict) -> tuple[tuple, dict, bool]:
    """`args`/`kwargs` with every bfloat16 tensor as float32 over the same layout (storage offset and strides kept, so
    a kernel's indexing and out-of-bounds reads are unchanged), and whether any was: Triton's interpreter computes
    on numpy, which has no bfloat16 (triton 3.9 returns garbage for bf16 arithmetic, triton 3.5 raises)."""
    import torch

    changed = False

    def one(value):
        nonlocal changed
        if isinstance(value, torch.Tensor) and value.dtype == torch.bfloat16:
            changed = True
            storage = torch.empty(0, dtype=value.dtype).set_(value.untyped_storage())
            return storage.float().as_strided(value.size(), value.stride(), value.storage_offset())
        if isinstance(value, (list, tuple)):
            return type(value)(one(v) for v in value)
        return value

    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}, changed


def narrowed(result, like):
    """`result` cast back to the dtypes `like` (the op's fake result for the original operands) has."""
    import torch

    if isinstance(result, torch.Tensor) and isinstance(like, torch.Tensor) and result.dtype != like.dtype:
        return result.to(like.dtype)
    if isinstance(result, (list, tuple)) and isinstance(like, (list, tuple)):
        return type(result)(narrowed(r, x) for r, x in zip(result, like, strict=False))
    return result


def fake_result(op, args: tuple, kwargs: dict):
    """The op's output as its fake kernel gives it for `args` (dtypes and shapes, no data)."""
    import torch

    from sdcompile.core.torchcompat.dynamo import fake_call

    return fake_call(getattr(getattr(torch.ops, op.namespace), op.op_name).default, args, kwargs)


def run_widened(op, function, args: tuple, kwargs: dict):
    """The tree's `function` (on whichever branch its flag picks) with bf16 operands computed in float32 and the
    result cast back to the dtypes the op returns: what the interpreter can compute, and a reference rounded once."""
    wide_args, wide_kwargs, changed = widened(args, kwargs)
    with quiet():
        result = function(*wide_args, **wide_kwargs)
    return narrowed(result, fake_result(op, args, kwargs)) if changed else result


def _guarded_call(op):
    import sys

    def call(*args, **kwargs):
        module = sys.modules[op.tree_module]
        function = getattr(module, op.op_name)._init_fn  # the tree's function behind its custom_op
        if not getattr(module, op.npu_branch, False):
            return function(*args, **kwargs)
        if getattr(_state, "fallback", False):  # a reference computation (tree_fallback): the op's meaning
            return _on_fallback(module, op, function, args, kwargs)
        rec = current_recording()
        launched = len(rec.launches) if rec is not None else 0
        try:  # the tree's prints ("[residual_gate_add] fallback (ndim) ..."): the kernel checks report them per site
            with contextlib.redirect_stdout(io.StringIO()):
                result = run_widened(op, function, args, kwargs)
        except Exception as exc:
            gap = interpreter_gap(exc)
            if not gap:
                raise
            _gaps.setdefault(op.name, gap)
            return _on_fallback(module, op, function, args, kwargs)
        if rec is not None:
            rec.calls[op.name] += 1
            rec.fell_back[op.name] += len(rec.launches) == launched
        return result

    return call


def _on_fallback(module, op, function, args: tuple, kwargs: dict):
    """The tree's torch fallback for this call: its NPU flag off, then on again."""
    setattr(module, op.npu_branch, False)
    try:
        return function(*args, **kwargs)
    finally:
        setattr(module, op.npu_branch, True)


@contextlib.contextmanager
def tree_fallback():
    """Inside the block the tree's Python fused ops compute their meaning (their torch fallback), not the NPU's
    kernel: for references a replacement is judged against."""
    saved = getattr(_state, "fallback", False)
    _state.fallback = True
    try:
        yield
    finally:
        _state.fallback = saved


def gaps() -> dict[str, str]:
    """Ops some of whose calls ran the tree's fallback because the interpreter could not run their kernel."""
    return dict(_gaps)
