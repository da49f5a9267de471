"""CPU reference kernels of the fused NPU ops, and their fake (shape-only) kernels.

Each kernel follows the documented semantics of the real op (torch_npu's custom-op reference, or what MindIE-SD's
compiled library computes for mindiesd::adaln / adaln_v2): inputs are upcast to float32, computed once, and the
result is rounded to the output dtype a single time — which is what a fused kernel does and why a fused result differs
slightly from an eager chain that rounds after every op in bf16.

The table that binds these functions to op names and schemas is data: `sdcompile/catalogs/fused_ops.toml`.
Fakes return empty tensors of the right shape/dtype so the ops trace as single opaque nodes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

_F32 = torch.float32


# --------------------------------------------------------------------------------------------- npu::npu_rms_norm
def npu_rms_norm(x, gamma, epsilon=1e-6):
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    xf = x.to(_F32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    y = (xf * rstd * gamma.to(_F32)).to(x.dtype)
    return y, rstd


def npu_rms_norm_fake(x, gamma, epsilon=1e-6):
    k = gamma.dim()
    rstd_shape = list(x.shape[: x.dim() - k]) + [1] * k
    return torch.empty_like(x), x.new_empty(rstd_shape, dtype=_F32)


# ------------------------------------------------------------------------------------------- npu::npu_fast_gelu
def npu_fast_gelu(x):
    # Ascend FastGelu: x / (1 + exp(-1.702|x|)) * exp(0.851 (x - |x|))  (== x * sigmoid(1.702 x)).
    xf = x.to(_F32)
    ax = xf.abs()
    return (xf / (1 + torch.exp(-1.702 * ax)) * torch.exp(0.851 * (xf - ax))).to(x.dtype)


def same_as_input_fake(x, *args, **kwargs):
    return torch.empty_like(x)


# ------------------------------------------------------------------------------------------ npu::npu_rotary_mul
def _rotate(x, mode):
    if mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    if mode == "interleave":
        return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    raise ValueError(f"npu_rotary_mul: rotary_mode must be 'half' or 'interleave', got {mode!r}")


def npu_rotary_mul(x, r1, r2, rotary_mode="half"):
    xf = x.to(_F32)
    out = xf * r1.to(_F32) + _rotate(xf, rotary_mode) * r2.to(_F32)
    return out.to(x.dtype)


def npu_rotary_mul_fake(x, r1, r2, rotary_mode="half"):
    return torch.empty_like(x)


# ----------------------------------------------------------------------------------------------- npu::npu_geglu
def npu_geglu(x, dim=-1, approximate=1, activate_left=False):
    a, b = x.to(_F32).chunk(2, dim=dim)
    value, gate = (b, a) if activate_left else (a, b)
    act = F.gelu(gate, approximate="tanh" if approximate == 1 else "none")
    return (value * act).to(x.dtype), act.to(x.dtype)


def npu_geglu_fake(x, dim=-1, approximate=1, activate_left=False):
    shape = list(x.shape)
    shape[dim] //= 2
    return x.new_empty(shape), x.new_empty(shape)


# ------------------------------------------------------------------------------------ npu::npu_fusion_attention
def _to_bnsd(t, layout, head_num):
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        b, s, h = t.shape
        return t.view(b, s, head_num, h // head_num).transpose(1, 2)
    if layout == "SBH":
        s, b, h = t.shape
        return t.view(s, b, head_num, h // head_num).permute(1, 2, 0, 3)
    raise ValueError(f"npu_fusion_attention: input_layout {layout!r} is not emulated (BNSD, BSND, BSH, SBH are)")


def _from_bnsd(t, layout):
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    b, n, s, d = t.shape
    if layout == "BSH":
        return t.transpose(1, 2).reshape(b, s, n * d)
    return t.permute(2, 0, 1, 3).reshape(s, b, n * d)  # SBH


def _kv_heads(t, layout, head_num, q_heads_dim_size):
    if layout in ("BSH", "SBH"):
        # BSH/SBH keys may carry fewer heads (GQA): infer from the hidden size and the query's head dim.
        return t.shape[-1] // q_heads_dim_size
    return head_num


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647,
                         inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False):
    if keep_prob != 1.0:
        raise NotImplementedError("emulated npu_fusion_attention does not implement dropout (keep_prob < 1)")
    if sparse_mode != 0 or actual_seq_qlen is not None or prefix is not None:
        raise NotImplementedError("emulated npu_fusion_attention implements sparse_mode=0 without varlen/prefix only")
    q = _to_bnsd(query, input_layout, head_num).to(_F32)
    head_dim = q.shape[-1]
    k = _to_bnsd(key, input_layout, _kv_heads(key, input_layout, head_num, head_dim)).to(_F32)
    v = _to_bnsd(value, input_layout, _kv_heads(value, input_layout, head_num, head_dim)).to(_F32)
    if k.shape[1] != q.shape[1]:  # grouped-query attention
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if pse is not None:
        scores = scores + pse.to(_F32)
    sq, skv = scores.shape[-2], scores.shape[-1]
    masked = torch.zeros(sq, skv, dtype=torch.bool)
    rows = torch.arange(sq)[:, None]
    cols = torch.arange(skv)[None, :]
    masked |= (cols - rows) > next_tockens  # sparse_mode 0: a band of pre/next tokens around the diagonal
    masked |= (rows - cols) > pre_tockens
    if atten_mask is not None:  # True marks a position that must not be attended to
        masked = masked | atten_mask.to(torch.bool)
    scores = scores.masked_fill(masked, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    probs = torch.exp(scores - row_max)
    row_sum = probs.sum(dim=-1, keepdim=True)
    out = torch.matmul(probs / row_sum, v)
    softmax_max = row_max.expand(*row_max.shape[:-1], 8).contiguous()  # the NPU op keeps 8 copies per row
    softmax_sum = row_sum.expand(*row_sum.shape[:-1], 8).contiguous()
    return (_from_bnsd(out, input_layout).to(query.dtype).contiguous(), softmax_max, softmax_sum,
            query.new_empty(0), 0, 0, 0)


def npu_fusion_attention_fake(query, key, value, head_num, input_layout, pse=None, padding_mask=None,
                              atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=2147483647,
                              next_tockens=2147483647, inner_precise=0, prefix=None, actual_seq_qlen=None,
                              actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False):
    if input_layout in ("BSND", "BSH"):
        b, sq = query.shape[0], query.shape[1]
    elif input_layout == "BNSD":
        b, sq = query.shape[0], query.shape[2]
    else:  # SBH
        b, sq = query.shape[1], query.shape[0]
    stats = query.new_empty((b, head_num, sq, 8), dtype=_F32)
    return torch.empty_like(query), stats, stats.clone(), query.new_empty(0), 0, 0, 0


# ------------------------------------------------------------------------------- npu::npu_dtype_cast (+ _npu_)
def npu_dtype_cast(x, dtype):
    # not x.to(dtype): under the torch_npu < 2.9 behaviour set Tensor.to(dtype) dispatches to this op
    return torch.ops.aten._to_copy.default(x, dtype=dtype)


def npu_dtype_cast_fake(x, dtype):
    return x.new_empty(x.shape, dtype=dtype)


# --------------------------------------------------------------------------------------- mindiesd::adaln(_v2)
def _as_modulation(t, x):
    # [B, H] modulates every token of [B, S, H]; [B, 1, H] and [B, S, H] broadcast as they are.
    return t[:, None] if t.dim() == 2 else t


def _adaln_f32(x, scale, shift, weight, bias, epsilon):
    xf = x.to(_F32)
    normed = F.layer_norm(
        xf, (x.shape[-1],),
        weight.to(_F32) if weight is not None else None,
        bias.to(_F32) if bias is not None else None,
        epsilon,
    )
    out = normed * (1 + _as_modulation(scale, x).to(_F32)) + _as_modulation(shift, x).to(_F32)
    mean = xf.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt(xf.var(dim=-1, unbiased=False, keepdim=True) + epsilon)
    return out, mean, rstd


def adaln(x, scale, shift, weight=None, bias=None, epsilon=1e-5):
    return _adaln_f32(x, scale, shift, weight, bias, epsilon)[0].to(x.dtype)


def adaln_v2(x, scale, shift, weight=None, bias=None, epsilon=1e-5):
    out, mean, rstd = _adaln_f32(x, scale, shift, weight, bias, epsilon)
    return out.to(x.dtype), mean.to(x.dtype), rstd.to(x.dtype)


def adaln_v2_fake(x, scale, shift, weight=None, bias=None, epsilon=1e-5):
    stats = list(x.shape[:-1]) + [1]
    return torch.empty_like(x), x.new_empty(stats), x.new_empty(stats)
