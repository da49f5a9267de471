"""The measurements `verify` makes: example inputs from a pattern's meta tensors, numerics against eager, timing.

Kept apart from the phase so `debug` and `integrate` can measure the same way.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

# Upstream's pattern tests assert cosine > 2**-7, which accepts almost anything; sdcompile's default gate is
# the mirror image, 1 - 2**-7 (changeable with --min-cosine). Both verdicts are reported.
UPSTREAM_MIN_COSINE = 2.0**-7
DEFAULT_MIN_COSINE = 1.0 - 2.0**-7
# Example inputs larger than this (elements per tensor) are shrunk: Wan's patterns declare [1, 75600, 5120]
# on the meta device, 774 MB in bf16 on CPU. Only dimensions that are not any input's last dimension shrink,
# and equal sizes shrink together, so broadcasting and the hidden size the pattern bakes in are kept.
ELEMENT_BUDGET = 1 << 20


@dataclass(frozen=True)
class InputSpec:
    name: str
    dtype: str  # "torch.bfloat16"
    declared: tuple[int, ...]  # the shape the pattern's inputs() declares
    used: tuple[int, ...]  # the shape verify ran with (smaller when the declared one was too large for CPU)
    content: str = "random"  # or what was built instead: "RoPE cos table from real angles (pair-repeated, ...)"


# Elementwise tolerances per output dtype (torch.testing.assert_close's rule |a - b| <= atol + rtol |b|), beside the
# cosine: the cosine sees a wrong output direction, this sees a few elements far off (a dropped gamma on a few
# channels). A fused kernel computes in fp32 where the pattern rounds each step, so low-precision outputs get
# a few ulps of their dtype (bf16's is 2**-8), not assert_close's bit-exact defaults.
TOLERANCES: dict[str, tuple[float, float]] = {  # dtype -> (rtol, atol)
    "torch.bfloat16": (3 * 2.0**-8, 2.0**-6),
    "torch.float16": (3 * 2.0**-11, 2.0**-9),
    "torch.float32": (1e-4, 1e-5),
    "torch.float64": (1e-7, 1e-7),
}
# Elements allowed outside those tolerances: a kernel that rounds differently flips a few values by one ulp.
MAX_OUTSIDE_FRACTION = 1e-3


@dataclass(frozen=True)
class Numerics:
    cosine: float  # of all outputs flattened, in float64
    max_abs: float  # max |compiled - eager|
    max_rel: float  # max |compiled - eager| / max |eager|
    min_cosine: float  # the gate applied
    passed: bool  # cosine >= min_cosine, within tolerance and everything finite
    upstream_gate: bool  # upstream's own assertion: cosine > 2**-7
    dtype: str = ""  # the least precise output dtype, which picks the tolerances
    rtol: float = 0.0
    atol: float = 0.0
    outside: int = 0  # elements with |compiled - eager| > atol + rtol |eager|
    elements: int = 0
    within_tolerance: bool = True  # outside <= MAX_OUTSIDE_FRACTION of the elements
    approximation_atol: float = 0.0  # added to atol: the documented error of an approximating fused op
    # judged against the same forward in float32 (testing/reference.py), when compiled differs from eager beyond the
    # tolerance: the mean |output - float32 output|, compiled's and eager's (None: not judged so)
    reference_error: float | None = None
    eager_reference_error: float | None = None


@dataclass(frozen=True)
class Timing:
    eager_ms: float
    compiled_ms: float
    speedup: float  # eager / compiled: > 1 means the compiled module is faster (upstream's second assertion)
    iterations: int


def shrunk_shapes(shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    protected = {s[-1] for s in shapes if s}
    shapes = [tuple(s) for s in shapes]
    while True:
        biggest = max((math.prod(s) for s in shapes), default=0)
        if biggest <= ELEMENT_BUDGET:
            return shapes
        candidates = sorted({d for s in shapes for d in s[:-1] if d > 1 and d not in protected}, reverse=True)
        if not candidates:
            return shapes  # nothing shrinkable: run as declared
        value = candidates[0]
        smaller = max(1, value // math.ceil(biggest / ELEMENT_BUDGET))
        if smaller == value:
            smaller = value - 1
        shapes = [tuple(smaller if (d == value and i < len(s) - 1) else d for i, d in enumerate(s)) for s in shapes]


def example_inputs(pattern_cls, seed: int = 0):
    """Random CPU tensors shaped like the pattern's own `inputs()` (meta tensors), and what was used.

    Integer inputs of the upstream patterns are row indices into [K, D] tables, so they are drawn from
    [0, K) with K the smallest first dimension among the other 2-D inputs (1 when there is none). Inputs the
    replacement feeds to a fused RoPE op as its tables are built from real angles (phases.verify_tables).
    """
    import dataclasses

    import torch

    from sdcompile.testing.tables import with_real_tables

    declared = list(pattern_cls.inputs())
    names = list(inspect.signature(pattern_cls.pattern).parameters)
    tensor_shapes = [tuple(t.shape) for t in declared if isinstance(t, torch.Tensor)]
    used_shapes = iter(shrunk_shapes(tensor_shapes))
    rank2_rows = [t.shape[0] for t in declared if isinstance(t, torch.Tensor) and t.dim() == 2
                  and (t.dtype.is_floating_point or t.dtype.is_complex)]
    index_bound = max(1, min(rank2_rows)) if rank2_rows else 1
    gen = torch.Generator().manual_seed(seed)
    values, specs = [], []
    for i, t in enumerate(declared):
        name = names[i] if i < len(names) else f"arg{i}"
        if not isinstance(t, torch.Tensor):
            values.append(t)
            continue
        shape = next(used_shapes)
        if t.dtype.is_floating_point or t.dtype.is_complex:
            value = torch.randn(shape, generator=gen, dtype=torch.complex64 if t.dtype.is_complex else torch.float32)
            value = value.to(t.dtype)
        elif t.dtype == torch.bool:
            value = torch.rand(shape, generator=gen) > 0.5
        else:
            value = torch.randint(0, index_bound, shape, generator=gen).to(t.dtype)
        values.append(value)
        specs.append(InputSpec(name, str(t.dtype), tuple(t.shape), tuple(shape)))
    values, roles = with_real_tables(pattern_cls.replacement, values)
    tensor_slot = [i for i, t in enumerate(declared) if isinstance(t, torch.Tensor)]
    for role in roles:
        k = tensor_slot.index(role.index)
        specs[k] = dataclasses.replace(specs[k], content=role.describe())
    return values, tuple(specs)


def output_tensors(value) -> list:
    """Every tensor in a module output: tensors, tuples/lists, dicts and diffusers' ModelOutput."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):  # ModelOutput is an OrderedDict
        return [t for v in value.values() for t in output_tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in output_tensors(v)]
    return []


def flat(tensors) -> object:
    import torch

    parts = []
    for t in tensors:
        t = t.detach().to("cpu")
        if t.is_complex():
            t = torch.view_as_real(t)
        parts.append(t.to(torch.float64).reshape(-1))
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)


def approximation_atol(fused_ops) -> float:
    """The largest documented error among fused ops that approximate what they replace (fused_ops.toml)."""
    from sdcompile.catalogs import load

    names = {str(op).removesuffix(".default") for op in fused_ops}
    return max((float(e.get("approximation_atol", 0.0)) for e in load("fused_ops").get("op", [])
                if e["name"].replace("::", ".") in names), default=0.0)


def tolerance_for(tensors) -> tuple[str, float, float]:
    """(dtype, rtol, atol) of the least precise floating dtype among `tensors`: a result is no more precise than
    the least precise tensor it was computed from or stored in."""
    import torch

    dtypes = [t.dtype for t in tensors if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]
    if not dtypes:
        return "torch.float32", *TOLERANCES["torch.float32"]
    worst = max(dtypes, key=lambda d: torch.finfo(d.to_real() if d.is_complex else d).eps)
    name = str(worst.to_real() if worst.is_complex else worst)
    rtol, atol = TOLERANCES.get(name, TOLERANCES["torch.float32"])
    return name, rtol, atol


def compare(compiled, eager, min_cosine: float = DEFAULT_MIN_COSINE, inputs=(), approximation: float = 0.0
            ) -> Numerics:
    """Compiled against eager outputs: the cosine gate and the per-dtype elementwise tolerance of the least
    precise dtype among the outputs and `inputs`; `approximation` (approximation_atol) widens atol."""
    import torch

    eager_tensors = output_tensors(eager)
    a, b = flat(output_tensors(compiled)), flat(eager_tensors)
    dtype, rtol, atol = tolerance_for([*eager_tensors, *output_tensors(inputs)])
    atol += approximation
    if a.shape != b.shape or a.numel() == 0:
        return Numerics(float("nan"), float("nan"), float("nan"), min_cosine, False, False, dtype, rtol, atol,
                        within_tolerance=False, approximation_atol=approximation)
    finite = bool(torch.isfinite(a).all() and torch.isfinite(b).all())
    cosine = float(torch.nn.functional.cosine_similarity(a, b, dim=0)) if finite else float("nan")
    diff = (a - b).abs()
    max_abs = float(diff.max())
    scale = float(b.abs().max())
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    outside = int((diff > atol + rtol * b.abs()).sum())
    within = finite and outside <= MAX_OUTSIDE_FRACTION * a.numel()
    passed = finite and cosine >= min_cosine and within
    return Numerics(cosine, max_abs, max_rel, min_cosine, passed, finite and cosine > UPSTREAM_MIN_COSINE,
                    dtype, rtol, atol, outside, a.numel(), within, approximation)


def time_calls(eager: Callable[[], object], compiled: Callable[[], object], synchronize: Callable[[], None],
               iterations: int = 20, warmup: int = 3) -> Timing:
    """Median wall time of each callable after warm-up, synchronizing the device around every call."""

    def median_ms(fn) -> float:
        for _ in range(warmup):
            fn()
        synchronize()
        samples = []
        for _ in range(iterations):
            start = time.perf_counter()
            fn()
            synchronize()
            samples.append((time.perf_counter() - start) * 1000)
        samples.sort()
        return samples[len(samples) // 2]

    eager_ms, compiled_ms = median_ms(eager), median_ms(compiled)
    return Timing(eager_ms, compiled_ms, eager_ms / compiled_ms if compiled_ms > 0 else float("inf"), iterations)
