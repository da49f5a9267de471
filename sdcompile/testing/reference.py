"""A low-precision compile judged against the same forward in float32.

A fused kernel that computes in float32 and rounds once (mindiesd::adaln) is more precise than the bf16 chain it
replaces, which rounds after the norm, the multiply and the add. A wide layer after it (a final projection over
3072 channels) turns those one-ulp differences into elements past the bf16 tolerance of eager's output. That is not a
wrong fusion: compiled is then judged by whether it is as close to the float32 forward as eager is.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from sdcompile.testing.numerics import Numerics, flat, output_tensors

_LOW_PRECISION = ("torch.bfloat16", "torch.float16")
MEAN_SLACK, MAX_SLACK = 1.25, 1.5  # compiled's error from the float32 output against eager's


def worth_a_reference(numerics: Numerics | None) -> bool:
    """Whether a failed comparison is one a float32 forward can settle: the cosine holds, everything is finite, and
    only the elementwise tolerance of a half-precision dtype is missed."""
    return (numerics is not None and not numerics.passed and not numerics.within_tolerance
            and numerics.dtype in _LOW_PRECISION and numerics.cosine >= numerics.min_cosine
            and numerics.cosine == numerics.cosine)  # not NaN


def float32_forward(module, inputs: dict[str, Any]):
    """The module's forward in float32 on a copy of it (the same weights, upcast), its floating inputs upcast."""
    import torch

    with torch.no_grad():
        return copy.deepcopy(module).float()(**_upcast(inputs))


def judged_against_reference(numerics: Numerics, compiled, eager, reference) -> Numerics:
    """`numerics` with its verdict taken against the float32 output: compiled passes when its mean error from it is
    at most a quarter above eager's and its largest at most half above (a fusion slightly wrong everywhere moves
    every element; counts of elements past the tolerance are noise here, where most of eager's are too)."""
    a, b, r = (flat(output_tensors(x)) for x in (compiled, eager, reference))
    if not (a.shape == b.shape == r.shape) or a.numel() == 0:
        return numerics
    mine, theirs = (a - r).abs(), (b - r).abs()
    passed = (float(mine.mean()) <= MEAN_SLACK * float(theirs.mean())
              and float(mine.max()) <= MAX_SLACK * float(theirs.max()))
    return dataclasses.replace(numerics, passed=passed, reference_error=float(mine.mean()),
                               eager_reference_error=float(theirs.mean()))


def _upcast(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() else value
    if isinstance(value, dict):
        return {k: _upcast(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_upcast(v) for v in value)
    return value
