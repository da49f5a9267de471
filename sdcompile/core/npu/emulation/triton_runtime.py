"""The target's Triton kernels on CPU: Triton's interpreter, behind a driver that answers as an Ascend host.

MindIE-SD's layer files (`residual_gate_add.py`, `scale_shift.py`, `muls_add.py`) take their Triton path when
`triton_utils._TRITON_ON_ASCEND` is true: Triton imports and `triton.runtime.driver.active.utils.
get_device_properties(device)` answers. Under the emulated NPU, `enable()` makes both true before the tree's layer
files are imported: TRITON_INTERPRET=1 turns every `@triton.jit` of the tree into an interpreted function that runs
on CPU tensors, and the active driver reports the emulated device's core counts (catalogs/fused_ops.toml
`[emulated_device]`). The tree's own Python then runs as on the NPU, unmodified: preconditions, fallbacks and their
prints, reshapes, and the kernels' indexing.

Two things the interpreter does not do, added here for every interpreted launch inside `recording()`:
    the launch itself is recorded (kernel name, grid), so a fused op that ran no kernel is a fallback;
    each load and store is checked against the extent of the operand it reads (the one holding its lowest address):
    lanes past it are recorded and masked, so the interpreter never touches memory the op does not own, because on
    the NPU they read another buffer or fault.

`status()` says which Triton ran the kernels, or why none did: every verdict carries it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import os
import threading
import warnings
from collections import Counter
from dataclasses import dataclass, field

ENV_INTERPRET = "TRITON_INTERPRET"
# "0" keeps the tree's CPU fallback (every verdict then says the NPU's kernels were not run)
ENV_NPU_KERNELS = "SDCOMPILE_NPU_KERNELS"
# The Triton builds that provide the `triton` package, most faithful first: Ascend's own, then upstream's.
DISTRIBUTIONS = ("triton-ascend", "triton")
INSTALL_HINT = "pip install 'sdcompile[kernels]' (upstream triton >= 3.6, or triton 3.5 with numpy < 2.4)"


@dataclass(frozen=True)
class KernelRuntime:
    """Whether this process runs the target's Triton kernels (interpreted) or the tree's CPU fallback."""

    runs_npu_kernels: bool
    triton: str | None  # "triton 3.9.0", "triton-ascend 3.2.0"; None when no Triton is installed
    why_not: str | None = None  # one sentence with the fix, when the kernels do not run

    def describe(self) -> str:
        if self.runs_npu_kernels:
            return (f"the target's NPU (Triton) kernels run under {self.triton}'s interpreter (bf16 operands computed "
                    "in float32: the interpreter has no bf16 arithmetic)")
        return f"NPU kernels not run: the tree's CPU fallback was used ({self.why_not})"


@dataclass(frozen=True)
class Launch:
    kernel: str  # the @triton.jit function's name: "residual_gate_add_kernel"
    grid: tuple[int, ...]


@dataclass(frozen=True)
class OutOfBounds:
    kernel: str
    access: str  # "load" or "store"
    elements: int  # lanes outside every operand
    operand: str | None  # the argument whose extent the first such lane starts from, when one does
    operand_elements: int | None  # how many elements that operand holds


@dataclass
class Recording:
    launches: list[Launch] = field(default_factory=list)
    out_of_bounds: list[OutOfBounds] = field(default_factory=list)
    # calls of the tree's Python fused ops in model runs, and those of them that launched no kernel (fell back):
    # integrate's count contract
    calls: Counter = field(default_factory=Counter)
    fell_back: Counter = field(default_factory=Counter)


@dataclass
class _Extent:
    name: str
    start: int
    end: int  # one past the last byte
    elements: int


_state = threading.local()
_lock = threading.Lock()
_status: KernelRuntime | None = None
_hooks_installed = False


# ------------------------------------------------------------------------------------------------ enabling
def enable(device_facts: dict) -> KernelRuntime:
    """Make the tree's Triton path run here (once per process); the runtime it ended with."""
    global _status
    with _lock:
        if _status is not None:
            return _status
        _status = _enable(device_facts)
        return _status


def status() -> KernelRuntime | None:
    """The runtime `enable()` set up, or None when this process never enabled it (real NPU, not activated)."""
    return _status


def installed_triton() -> tuple[str, str] | None:
    """(distribution, version) of the installed Triton, Ascend's build first."""
    for dist in DISTRIBUTIONS:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _enable(device_facts: dict) -> KernelRuntime:
    found = installed_triton()
    label = f"{found[0]} {found[1]}" if found else None
    if os.environ.get(ENV_NPU_KERNELS, "1") == "0":
        return KernelRuntime(False, label, f"{ENV_NPU_KERNELS}=0 asked for it")
    if found is None:
        return KernelRuntime(False, None, f"Triton is not installed: {INSTALL_HINT}")
    os.environ[ENV_INTERPRET] = "1"  # read when each @triton.jit decorator runs: Triton's own helpers, the tree's
    try:
        triton = _import_interpreted()
        from triton.runtime import driver
    except Exception as exc:  # noqa: BLE001 - a broken Triton install is reported, never fatal
        return KernelRuntime(False, label, f"{label} does not import ({type(exc).__name__}: {exc}): {INSTALL_HINT}")
    atexit.register(_silence_teardown)
    try:
        _install_hooks()
        if found[0] == "triton":
            _as_triton_ascend()
        _self_test(triton)
    except Exception as exc:  # noqa: BLE001 - an interpreter that cannot run here is said, with the fix
        import numpy

        error = error_text(exc)
        return KernelRuntime(False, label, f"{label}'s interpreter fails here with numpy {numpy.__version__} "
                                           f"({error}): {INSTALL_HINT}")
    # Only now does the tree see an Ascend host: with a driver and no working interpreter its layers would launch
    # kernels nothing can run.
    driver.set_active(_AscendDriver(device_facts))
    return KernelRuntime(True, label)


def _import_interpreted():
    """`triton`, with its @jit helpers (tl.cdiv, ...) interpreted. Something imported before the emulation was
    enabled (torch's inductor does, when a torch behaviour is probed) leaves them compiled-kernel functions, which
    the interpreter cannot call: Triton's pure-Python modules are then imported again (its compiled core is kept)."""
    import importlib
    import sys

    triton = sys.modules.get("triton")
    if triton is not None and type(getattr(triton.language, "cdiv", None)).__name__ != "InterpretedFunction":
        for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
            if not name.startswith("triton._C"):
                del sys.modules[name]
        importlib.invalidate_caches()
    return importlib.import_module("triton")


# triton-ascend's limit on a block's elements (triton_patch/language/_utils.py: TRITON_MAX_TENSOR_NUMEL)
ASCEND_MAX_TENSOR_NUMEL = 1048576


def _as_triton_ascend() -> None:
    """Upstream Triton's front end where Ascend's differs in what the tree's kernels use: triton-ascend takes blocks
    and `arange` ranges of any size (its power-of-two checks are dropped in triton_patch/language/semantic.py and
    _utils.py, up to ASCEND_MAX_TENSOR_NUMEL elements), and the tree's row kernels rely on it (gather_scale_shift's
    BLOCK_D = D = 5376 on MiniMax-H3, swiglu's 7168)."""
    import triton.language as tl
    from triton.language import core, semantic

    def validate_block_shape(shape):
        numel = 1
        for i, d in enumerate(shape):
            if not isinstance(d, int):
                raise TypeError(f"Shape element {i} must have type `constexpr[int]`, got `constexpr[{type(d)}]")
            numel *= d
        if numel > ASCEND_MAX_TENSOR_NUMEL:
            raise ValueError(f"numel ({numel}) exceeds triton maximum tensor numel ({ASCEND_MAX_TENSOR_NUMEL})")
        return numel

    core.validate_block_shape = validate_block_shape  # core.block_type and tl.full read it by this name

    cls = semantic.TritonSemantic
    if getattr(cls.arange, "sdcompile_ascend", False):
        return
    original = cls.arange

    def arange(self, start, end, *, ret_ty=None):
        size = end - start if isinstance(start, int) and isinstance(end, int) else 0
        if size <= 0 or not size & (size - 1):
            return original(self, start, end, ret_ty=ret_ty)
        ret_ty = ret_ty or tl.block_type(tl.int32, [size])
        make = getattr(self, "make_tensor", None) or self.tensor
        return make(self.builder.create_make_range(ret_ty.to_ir(self.builder), start, end), ret_ty)

    arange.sdcompile_ascend = True
    cls.arange = arange


def _silence_teardown() -> None:
    """Triton's compiled module (nanobind) reports the IR objects its interpreter keeps alive at interpreter teardown
    ("nanobind: leaked 4 instances!", tens of lines) on stderr, after the command said everything it had to: stderr
    is closed for that teardown. atexit runs after an uncaught exception's traceback is printed, so nothing of the
    command's own is lost."""
    import sys

    try:
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    except (OSError, ValueError):
        pass


class _AscendUtils:
    def __init__(self, facts: dict):
        self._properties = {"num_aicore": int(facts["num_aicore"]), "num_vectorcore": int(facts["num_vectorcore"])}

    def get_device_properties(self, device) -> dict:
        return dict(self._properties)


class _AscendDriver:
    """What the tree asks of `triton.runtime.driver.active`: the device's core counts (the interpreter itself
    launches nothing through a driver)."""

    def __init__(self, facts: dict):
        self.utils = _AscendUtils(facts)

    def is_active(self) -> bool:
        return True

    def get_current_device(self) -> int:
        return 0

    def get_current_target(self):
        return None


def _self_test(triton) -> None:
    """A grid-stride loop like the tree's kernels: triton 3.5's interpreter fails on it with numpy >= 2.4."""
    import torch
    import triton.language as tl

    @triton.jit
    def _copy(src, dst, n, BLOCK: tl.constexpr):  # noqa: N803 - Triton's constexpr spelling
        pid = tl.program_id(axis=0)
        for block in range(pid, tl.cdiv(n, BLOCK), tl.num_programs(axis=0)):
            offs = block * BLOCK + tl.arange(0, BLOCK)
            tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    src = torch.arange(10, dtype=torch.float32)
    dst = torch.zeros_like(src)
    with quiet():
        _copy[(2,)](src, dst, 10, BLOCK=4)
    if not torch.equal(src, dst):
        raise RuntimeError("the interpreter copied a tensor wrongly")


@contextlib.contextmanager
def quiet():
    """Triton 3.5's interpreter converts one-element arrays to scalars, which numpy < 2.4 only warns about."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Conversion of an array with ndim > 0", category=DeprecationWarning)
        yield


def error_text(exc: BaseException) -> str:
    """The interpreter wraps a kernel's error in InterpreterError(repr(error)): the original, as one line."""
    inner = exc.__cause__ if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None else exc
    return f"{type(inner).__name__}: {inner}".splitlines()[0]


def interpreter_gap(exc: BaseException) -> str | None:
    """Why the interpreter (not the kernel) failed, when it did: a feature its own objects lack (triton 3.5 has no
    bf16 scalar constants: "'InterpreterBuilder' object has no attribute 'get_bf16'"), or what it says it does not
    implement; the kernel's and the tree's own errors are the verdict instead."""
    import traceback

    inner = exc.__cause__ if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None else exc
    missing = isinstance(inner, AttributeError) and type(getattr(inner, "obj", None)).__module__ == _INTERPRETER
    frames = traceback.extract_tb(inner.__traceback__)
    unimplemented = (isinstance(inner, NotImplementedError) and bool(frames)
                     and frames[-1].filename.replace("\\", "/").endswith("triton/runtime/interpreter.py"))
    if missing or unimplemented:
        return f"{_status.triton if _status else 'Triton'}'s interpreter cannot run it ({error_text(exc)})"
    return None


_INTERPRETER = "triton.runtime.interpreter"


# --------------------------------------------------------------------------------------- recording launches
@contextlib.contextmanager
def recording():
    """Record every interpreted launch (and out-of-bounds access) made in this thread inside the block."""
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    rec = Recording()
    stack.append(rec)
    try:
        with quiet():
            yield rec
    finally:
        stack.pop()


def current_recording() -> Recording | None:
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    from triton.runtime import interpreter

    original_call = interpreter.GridExecutor.__call__  # every interpreted launch, on triton 3.2 to 3.9

    def call(self, *args, **kwargs):
        rec = current_recording()
        if rec is None:
            return original_call(self, *args, **kwargs)
        name = getattr(self.fn, "__name__", "kernel")
        rec.launches.append(Launch(name, tuple(self.grid) if isinstance(self.grid, tuple) else ()))
        _state.launch = (name, _extents(self.arg_names, args, kwargs), rec)
        try:
            return original_call(self, *args, **kwargs)
        finally:
            _state.launch = None

    interpreter.GridExecutor.__call__ = call
    builder = interpreter.interpreter_builder
    original_load, original_store = builder.create_masked_load, builder.create_masked_store

    def create_masked_load(ptrs, mask, *args, **kwargs):
        return original_load(ptrs, _checked(ptrs, mask, "load"), *args, **kwargs)

    def create_masked_store(ptrs, value, mask, *args, **kwargs):
        return original_store(ptrs, value, _checked(ptrs, mask, "store"), *args, **kwargs)

    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    _hooks_installed = True


def _extents(names, args, kwargs) -> list[_Extent]:
    import torch

    found = []
    for name, value in [*zip(names, args, strict=False), *kwargs.items()]:
        if isinstance(value, torch.Tensor) and value.numel():
            size = value.element_size()
            last = sum((n - 1) * s for n, s in zip(value.shape, value.stride(), strict=True)) if value.dim() else 0
            found.append(_Extent(name, value.data_ptr(), value.data_ptr() + (last + 1) * size, value.numel()))
    return found


def _checked(ptrs, mask, access: str):
    """`mask` with the lanes outside the accessed operand switched off, each such access recorded. One load or store
    reads one operand (its base pointer plus offsets): the operand holding the lowest active address."""
    launch = getattr(_state, "launch", None)
    if launch is None:
        return mask
    import numpy as np

    kernel, extents, rec = launch
    width = max(ptrs.get_element_ty().primitive_bitwidth // 8, 1)
    active = np.asarray(mask.data, dtype=bool)
    addresses = np.broadcast_to(ptrs.data.astype(np.uint64), active.shape)
    if not active.any():
        return mask
    lowest = int(addresses[active].min())
    owner = max((e for e in extents if e.start <= lowest), key=lambda e: e.start, default=None)
    if owner is None:
        inside = np.zeros_like(active)
    else:
        inside = (addresses >= owner.start) & (addresses + width <= owner.end)
    outside = active & ~inside
    if not outside.any():
        return mask
    rec.out_of_bounds.append(OutOfBounds(kernel, access, int(outside.sum()), owner.name if owner else None,
                                         owner.elements if owner else None))
    return type(mask)(active & inside, mask.dtype)
