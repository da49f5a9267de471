"""Small models, one per mismatch type, written against upstream groups that match their own search functions on
this torch (`sdcompile verify --all-groups`): MindIE-SD 3.1.0's WanRmsNormPatternGroup (control, types 1-5)
and MiniMaxH3RopePatternGroup's float32 variant (types 6 and 7, which need a frozen constant); `ordering` is
for data/rotate_half_pattern.py and the backend's default groups (type 5, ordering).

Each factory returns (module, forward kwargs), the `--model-file path.py:factory` contract.
"""

from __future__ import annotations

import torch
from torch import nn

HIDDEN = 64
# The eps as WanRmsNormPattern has it: 1e-6 rounded to float32, the constant a float32 graph carries.
EPS = torch.tensor(1e-6, dtype=torch.float32).item()


class _Norm(nn.Module):
    def __init__(self, weight_dtype=torch.bfloat16):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(HIDDEN, dtype=weight_dtype))


class Control(_Norm):
    """Written exactly like WanRmsNormPattern's search function; the weight is a module parameter."""

    def forward(self, x):
        variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        add = torch.ops.aten.add.Scalar(mean, EPS)
        rsqrt = torch.ops.aten.rsqrt.default(add)
        result = x * rsqrt
        return result * self.weight


class OverloadChanged(_Norm):
    """Type 1: `mean + eps` in Python traces to aten.add.Tensor; the pattern spells aten.add.Scalar."""

    def forward(self, x):
        variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        rsqrt = torch.rsqrt(mean + EPS)
        result = x * rsqrt
        return result * self.weight


class ConstantChanged(_Norm):
    """Type 2: eps written as the Python literal 1e-6, not its float32-rounded value."""

    def forward(self, x):
        variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        add = torch.ops.aten.add.Scalar(mean, 1e-6)
        rsqrt = torch.ops.aten.rsqrt.default(add)
        result = x * rsqrt
        return result * self.weight


class CastAdded(_Norm):
    """Type 3: normalises in float32 and casts to bf16 before the weight multiply (a bf16 weight)."""

    def forward(self, x):
        x = x.float()
        variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        add = torch.ops.aten.add.Scalar(mean, EPS)
        rsqrt = torch.ops.aten.rsqrt.default(add)
        result = (x * rsqrt).to(torch.bfloat16)
        return result * self.weight


class ViewAdded(_Norm):
    """Type 4: flattens the tokens between the normalisation and the weight multiply."""

    def forward(self, x):
        variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        add = torch.ops.aten.add.Scalar(mean, EPS)
        rsqrt = torch.ops.aten.rsqrt.default(add)
        result = (x * rsqrt).view(-1, HIDDEN)
        return (result * self.weight).view(x.shape)


class ExternalUser(_Norm):
    """Type 5: the normalised value before the weight is also used outside the pattern."""

    def forward(self, x):
        variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        add = torch.ops.aten.add.Scalar(mean, EPS)
        rsqrt = torch.ops.aten.rsqrt.default(add)
        result = x * rsqrt
        return result * self.weight + result


def _bf16_input(dtype=torch.bfloat16):
    return {"x": torch.randn(2, 16, HIDDEN, generator=torch.Generator().manual_seed(0)).to(dtype)}


def control():
    return Control(), _bf16_input()


def type1():
    return OverloadChanged(), _bf16_input()


def type2():
    return ConstantChanged(), _bf16_input()


def type3():
    return CastAdded(), _bf16_input()


def type4():
    return ViewAdded(), _bf16_input()


def type5():
    return ExternalUser(), _bf16_input()


# ------------------------------------------------------------------------ RoPE: types 6 and 7 (after freezing)
ROTARY, HALF, HEAD, SEQ, HEADS = 96, 48, 128, 4, 2


def rope(x, cos, sin):
    """Written like MiniMaxH3RopePattern's search function (the float32 variant)."""
    x_rot = torch.ops.aten.slice.Tensor(x, 3, 0, ROTARY)
    x1, x2 = torch.ops.aten.split.Tensor(x_rot, HALF, -1)
    rotated = torch.ops.aten.cat.default([torch.ops.aten.neg.default(x2), x1], -1)
    cos4 = torch.ops.aten.unsqueeze.default(torch.ops.aten.unsqueeze.default(cos, 0), 2)
    sin4 = torch.ops.aten.unsqueeze.default(torch.ops.aten.unsqueeze.default(sin, 0), 2)
    return torch.ops.aten.add.Tensor(torch.ops.aten.mul.Tensor(x_rot, cos4), torch.ops.aten.mul.Tensor(rotated, sin4))


class _Rope(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.register_buffer("freqs_cos", torch.randn(SEQ, ROTARY, generator=g))
        self.register_buffer("freqs_sin", torch.randn(SEQ, ROTARY, generator=g))


class RopeOnBuffers(_Rope):
    """Type 7: cos/sin are module buffers; a unit test passing them as arguments hits, this model does not
    once freezing folds the buffers' unsqueezes into constants."""

    def forward(self, q):
        return rope(q, self.freqs_cos, self.freqs_sin)


class RopeMixed(_Rope):
    """Type 6: q is rotated with cos/sin passed in (matches), k with the module's buffers (a frozen constant)."""

    def forward(self, q, k, cos, sin):
        return rope(q, cos, sin), rope(k, self.freqs_cos, self.freqs_sin)


def _x(seed: int):
    return torch.randn(1, SEQ, HEADS, HEAD, generator=torch.Generator().manual_seed(seed))


def type6():
    g = torch.Generator().manual_seed(2)
    return RopeMixed(), {"q": _x(3), "k": _x(4), "cos": torch.randn(SEQ, ROTARY, generator=g),
                         "sin": torch.randn(SEQ, ROTARY, generator=g)}


def type7():
    return RopeOnBuffers(), {"q": _x(3)}


# ------------------------------------------------- RoPE over the whole head: the ordering conflict (type 5)
def rope_full(x, cos, sin):
    """Rotate-half over the whole head, written like data/rotate_half_pattern.py's search function."""
    x1, x2 = torch.ops.aten.split.Tensor(x, HEAD // 2, -1)
    rotated = torch.ops.aten.cat.default([torch.ops.aten.neg.default(x2), x1], -1)
    cos4 = torch.ops.aten.unsqueeze.default(torch.ops.aten.unsqueeze.default(cos, 0), 2)
    sin4 = torch.ops.aten.unsqueeze.default(torch.ops.aten.unsqueeze.default(sin, 0), 2)
    return torch.ops.aten.add.Tensor(torch.ops.aten.mul.Tensor(x, cos4), torch.ops.aten.mul.Tensor(rotated, sin4))


class FullRope(nn.Module):
    def forward(self, q, cos, sin):
        return rope_full(q, cos, sin)


def ordering():
    g = torch.Generator().manual_seed(5)
    cos, sin = torch.randn(SEQ, HEAD, generator=g), torch.randn(SEQ, HEAD, generator=g)
    return FullRope(), {"q": _x(6), "cos": cos, "sin": sin}
