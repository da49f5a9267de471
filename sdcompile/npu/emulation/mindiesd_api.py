"""The mindiesd functions the target's pattern replacements call, written against the emulated fused ops.

MindIE-SD's own `mindiesd/layers/__init__.py` imports flash-attention modules that load NPU-only shared
libraries, so on CPU the package cannot be imported. The loader (`sdcompile.target.loader`) serves these
functions as `mindiesd.*`, `mindiesd.layers.*` and `mindiesd.layers.scale_shift.*` instead. They follow the
documented contract of MindIE-SD 3.1.0 (same arguments, checks, broadcasting and dispatch to one fused op),
so a replacement traces to the same single op node it produces on an NPU.
"""

from __future__ import annotations

import torch


class ParametersInvalid(ValueError):
    """Raised for arguments MindIE-SD rejects (its own error has the same name)."""


def _ops(namespace: str):
    return getattr(torch.ops, namespace)


# ------------------------------------------------------------------------------------------------ AdaLN
def _check_adaln(layernorm, x, scale, shift, fused) -> None:
    if not isinstance(layernorm, torch.nn.LayerNorm):
        raise ParametersInvalid(f"layernorm must be torch.nn.LayerNorm, got {type(layernorm)}")
    for name, value in (("x", x), ("scale", scale), ("shift", shift)):
        if not isinstance(value, torch.Tensor):
            raise ParametersInvalid(f"{name} must be a torch.Tensor, got {type(value)}")
    if not isinstance(fused, bool):
        raise ParametersInvalid(f"fused must be bool, got {type(fused)}")
    if x.dim() != 3:
        raise ParametersInvalid(f"x must be 3-D [B, S, H], got {x.dim()}-D")
    for name, value in (("scale", scale), ("shift", shift)):
        if value.dim() not in (2, 3):
            raise ParametersInvalid(f"{name} must be [B, H], [B, 1, H] or [B, S, H], got {value.dim()}-D")
        if value.size(0) != x.size(0) or value.size(-1) != x.size(-1):
            raise ParametersInvalid(f"{name} {tuple(value.shape)} does not fit x {tuple(x.shape)}")
        if value.dim() == 3 and value.size(1) not in (1, x.size(1)):
            raise ParametersInvalid(f"{name} {tuple(value.shape)}: dim 1 must be 1 or {x.size(1)}")


def _tokenwise(x, scale, shift):
    """[B, S, H] modulation (S > 1) runs as B*S rows of one token each, as MindIE-SD does for the fused op."""
    def is_tokenwise(t):
        return t.dim() == 3 and t.size(1) == x.size(1) and x.size(1) != 1

    if not (is_tokenwise(scale) or is_tokenwise(shift)):
        return x, scale, shift, None
    b, s, h = x.shape

    def expand(t):
        if t.dim() == 2:
            t = t[:, None, :]
        return t.expand(-1, s, -1).reshape(b * s, h)

    return x.reshape(b * s, 1, h), expand(scale), expand(shift), (b, s, h)


def layernorm_scale_shift(layernorm, x, scale, shift, fused=True):
    """out = layernorm(x) * (1 + scale) + shift; one fused AdaLN op when `fused`."""
    _check_adaln(layernorm, x, scale, shift, fused)
    if not fused:
        scale = scale[:, None] if scale.dim() == 2 else scale
        shift = shift[:, None] if shift.dim() == 2 else shift
        return layernorm(x) * (1 + scale) + shift
    weight, bias = (layernorm.weight, layernorm.bias) if layernorm.elementwise_affine else (None, None)
    x, scale, shift, tokenwise_shape = _tokenwise(x, scale, shift)
    from sdcompile.npu.emulation.ops import emulated_device_facts

    namespace, op = emulated_device_facts()["adaln_op"].split("::")
    out = getattr(_ops(namespace), op)(x, scale, shift, weight, bias, layernorm.eps)
    out = out[0] if isinstance(out, (tuple, list)) else out
    return out.reshape(tokenwise_shape) if tokenwise_shape else out


# ------------------------------------------------------------------------------------------------- RoPE
def rotary_position_embedding(x, cos, sin, rotated_mode="rotated_half", head_first=False, fused=True):
    """RoPE on 4-D x with [S, D] or 4-D cos/sin; one npu_rotary_mul when `fused`. Computes in cos.dtype."""
    for name, value in (("x", x), ("cos", cos), ("sin", sin)):
        if not isinstance(value, torch.Tensor):
            raise ParametersInvalid(f"{name} must be a torch.Tensor, got {type(value)}")
    if x.dim() != 4:
        raise ParametersInvalid(f"x must be 4-D, got {x.dim()}-D")
    if cos.dim() not in (2, 4) or cos.dim() != sin.dim():
        raise ParametersInvalid(f"cos/sin must both be 2-D or 4-D, got {cos.dim()}-D and {sin.dim()}-D")
    modes = {"rotated_half": "half", "rotated_interleaved": "interleave"}
    if rotated_mode not in modes:
        raise ParametersInvalid(f"rotated_mode must be 'rotated_half' or 'rotated_interleaved', got {rotated_mode!r}")
    if cos.dim() == 2:  # [S, D] -> broadcastable against x's layout
        keep = (x.dim() - 2, x.dim() - 1) if head_first else (1, x.dim() - 1)
        shape = [d if i in keep else 1 for i, d in enumerate(x.shape)]
        cos, sin = cos.view(*shape), sin.view(*shape)
    mode = modes[rotated_mode]
    x_in = x.to(cos.dtype)
    if fused:
        out = _ops("npu").npu_rotary_mul(x_in, cos, sin, mode)
    elif mode == "interleave":
        real, imag = x_in.reshape(*x_in.shape[:-1], -1, 2).unbind(-1)
        out = x_in * cos + torch.stack([-imag, real], dim=-1).flatten(3) * sin
    else:
        real, imag = x_in.reshape(*x_in.shape[:-1], 2, -1).unbind(-2)
        out = x_in * cos + torch.cat([-imag, real], dim=-1) * sin
    return out.type_as(x)


# ---------------------------------------------------------------------------------------- elementwise ops
def muls_add(x, y, scale):
    return _ops("mindiesd").muls_add(x, y, scale)


def residual_gate_add(x, y, gate):
    return _ops("mindiesd").residual_gate_add(x, y, gate)


def scale_shift(x, scale, shift):
    return _ops("mindiesd").scale_shift(x, scale, shift)


def gather_scale_shift(x, scale_table, shift_table, indices):
    return _ops("mindiesd").gather_scale_shift(x, scale_table, shift_table, indices)


def swiglu(x):
    return _ops("mindiesd").swiglu(x)


def gather_residual_gate(residual, value, gate_table, indices):
    return _ops("mindiesd").gather_residual_gate(residual, value, gate_table, indices)


# Which stand-in module serves which function (module names relative to the `mindiesd` package).
STANDIN_MODULES: dict[str, tuple[str, ...]] = {
    "": ("layernorm_scale_shift", "rotary_position_embedding"),
    "layers": ("layernorm_scale_shift", "rotary_position_embedding", "muls_add", "residual_gate_add"),
    "layers.scale_shift": ("scale_shift", "gather_scale_shift", "swiglu", "gather_residual_gate"),
}
