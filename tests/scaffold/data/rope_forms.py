"""RoPE as diffusers writes it, in hand-written attention blocks for `--model-file`: rotate-half (chunk/cat),
interleaved (unbind/stack/flatten), interleaved on [B, S, H * D] before the head split (LTX), rotate-half on the
leading channels of each head only (MiniMax-H3), complex
(view_as_complex times cos + i sin, QwenImage), rotation matrices (HiDream), strided writes (Wan) and even/odd lanes
stacked (Mochi), each applied to q and to k in one module; and rotate-half cut by a graph break, which no pattern can
match. The tables come from real
angles (cos/sin of position x inverse frequency), repeated by halves or by pairs as each form expects, or as
cos + i sin for the complex form, as [[cos, -sin], [sin, cos]] for the matrix form."""

import torch
from torch import nn


def rotate_half_rope(a, b, c):
    """Named and ordered to hide the roles: `b` is the tokens, `c` the cos table, `a` the sin table."""
    x1, x2 = b.chunk(2, dim=-1)
    return b * c + torch.cat([-x2, x1], dim=-1) * a


def broken_rope(x, cos, sin):
    """Rotate-half with a graph break between its products (what a print or a data-dependent call left in a RoPE
    function does): the chain is split across two compiled graphs."""
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1) * sin
    torch._dynamo.graph_break()
    return x * cos + rotated


def interleaved_rope(x, freqs):
    cos, sin = freqs
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    real, imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
    rotated = torch.stack([-imag, real], dim=-1).flatten(3)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


def folded_heads_rope(x, freqs):
    """LTX's form: x is [B, S, H * D] before the head split, the pair-repeated tables [B, S, H * D] too."""
    cos, sin = freqs
    real, imag = x.unflatten(2, (-1, 2)).unbind(-1)
    rotated = torch.stack([-imag, real], dim=-1).flatten(2)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


def complex_rope(f, t):
    """Ordered to hide the roles: `f` is the complex table [S, D/2], `t` the tokens [B, S, H, D]."""
    pairs = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * f.unsqueeze(1)).flatten(3).type_as(t)


def apply_rope(m, t):
    """HiDream's form, under its name (phase 1 finds this form by name: its ops, a multiply and an add, are every
    layer's): `m` the rotation matrices [1, S, 1, D/2, 2, 2], `t` the tokens [B, S, H, D]."""
    pairs = t.float().reshape(*t.shape[:-1], -1, 1, 2)
    return (m[..., 0] * pairs[..., 0] + m[..., 1] * pairs[..., 1]).reshape(*t.shape).type_as(t)


def strided_rope(s, t, c):
    """Wan's form, named and ordered to hide the roles: `t` the tokens [B, S, H, D], `c` the cos table and `s` the
    sin table [1, S, 1, D]; x's lane pairs rotated and written back to lanes 0::2 and 1::2."""
    x1, x2 = t.unflatten(-1, (-1, 2)).unbind(-1)
    cos, sin = c[..., 0::2], s[..., 1::2]
    out = torch.empty_like(t)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out.type_as(t)


def even_odd_rope(c, t, s):
    """Mochi's form, ordered to hide the roles: `t` the tokens [B, S, H, D], `c` and `s` one cos and one sin per pair
    of lanes and head [S, H, D/2]; even and odd lanes rotated and stacked back."""
    even, odd = t[..., 0::2].float(), t[..., 1::2].float()
    first = (even * c - odd * s).to(t.dtype)
    second = (even * s + odd * c).to(t.dtype)
    return torch.stack([first, second], dim=-1).flatten(-2)


def partial_rope(s, t, c):
    """MiniMax-H3's form, ordered to hide the roles: `t` the tokens [B, S, H, D], `c` and `s` the tables [S, R] of
    the leading R < D channels of each head, which alone rotate (by halves); the other channels pass through."""
    width = c.shape[-1]
    rotary, rest = t[..., :width], t[..., width:]
    c, s = c[None, :, None, :], s[None, :, None, :]
    x1, x2 = rotary.chunk(2, dim=-1)
    return torch.cat([rotary * c + torch.cat([-x2, x1], dim=-1) * s, rest], dim=-1)


def _angles(seq: int, dim: int, theta: float = 10000.0):
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return (torch.arange(seq, dtype=torch.float64)[:, None] * inv[None, :]).float()  # [S, D/2]


class Attention(nn.Module):
    def __init__(self, form: str, dim: int = 32, heads: int = 2):
        super().__init__()
        self.form, self.heads = form, heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden_states, cos, sin):
        b, s, d = hidden_states.shape
        if self.form == "folded":
            q, k, v = self.qkv(hidden_states).chunk(3, dim=-1)
            q, k = folded_heads_rope(q, (cos, sin)), folded_heads_rope(k, (cos, sin))
            heads = (b, s, self.heads, d // self.heads)
            q, k, v = (t.view(heads).transpose(1, 2) for t in (q, k, v))
            return self.out(nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d))
        q, k, v = self.qkv(hidden_states).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        if self.form == "half":
            q, k = rotate_half_rope(sin, q, cos), rotate_half_rope(sin, k, cos)
        elif self.form == "strided":
            q, k = strided_rope(sin, q, cos), strided_rope(sin, k, cos)
        elif self.form == "even_odd":
            q, k = even_odd_rope(cos, q, sin), even_odd_rope(cos, k, sin)
        elif self.form == "broken":
            q, k = broken_rope(q, cos, sin), broken_rope(k, cos, sin)
        elif self.form == "partial":
            q, k = partial_rope(sin, q, cos), partial_rope(sin, k, cos)
        else:
            q, k = interleaved_rope(q, (cos, sin)), interleaved_rope(k, (cos, sin))
        attn = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.out(attn.transpose(1, 2).reshape(b, s, d))


def rotate_half(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim // heads)
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[None, :, None, :]  # halves: [1, S, 1, D]
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[None, :, None, :]
    return Attention("half", dim, heads), {"hidden_states": torch.randn(1, seq, dim), "cos": cos, "sin": sin}


def broken_chain(seq: int = 8, dim: int = 32, heads: int = 2):
    module, inputs = rotate_half(seq, dim, heads)
    module.form = "broken"
    return module, inputs


def interleaved(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim // heads)
    cos = angles.cos().repeat_interleave(2, dim=-1)  # pairs: [S, D]
    sin = angles.sin().repeat_interleave(2, dim=-1)
    return Attention("pairs", dim, heads), {"hidden_states": torch.randn(1, seq, dim), "cos": cos, "sin": sin}


def strided_writes(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim // heads)
    cos = angles.cos().repeat_interleave(2, dim=-1)[None, :, None, :]  # pairs, as Wan builds them: [1, S, 1, D]
    sin = angles.sin().repeat_interleave(2, dim=-1)[None, :, None, :]
    return Attention("strided", dim, heads), {"hidden_states": torch.randn(1, seq, dim), "cos": cos, "sin": sin}


def even_odd_lanes(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim // heads)
    per_head = torch.stack([angles * (1.0 + 0.5 * h) for h in range(heads)], dim=1)  # Mochi's per-head: [S, H, D/2]
    return (Attention("even_odd", dim, heads),
            {"hidden_states": torch.randn(1, seq, dim), "cos": per_head.cos(), "sin": per_head.sin()})


def even_odd_lanes_shared(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim // heads)[:, None, :]  # Mochi's form with one rotation the heads share: [S, 1, D/2]
    return (Attention("even_odd", dim, heads),
            {"hidden_states": torch.randn(1, seq, dim), "cos": angles.cos(), "sin": angles.sin()})


def partial_rotary(seq: int = 8, dim: int = 64, heads: int = 2, width: int = 16):
    torch.manual_seed(0)
    angles = _angles(seq, width)  # the leading `width` of each head's dim // heads channels
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1)  # halves: [S, width]
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1)
    return Attention("partial", dim, heads), {"hidden_states": torch.randn(1, seq, dim), "cos": cos, "sin": sin}


def folded_heads(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim)  # one rotation over all H * D channels, as LTX builds it
    cos = angles.cos().repeat_interleave(2, dim=-1)[None]  # pairs: [1, S, H * D]
    sin = angles.sin().repeat_interleave(2, dim=-1)[None]
    return Attention("folded", dim, heads), {"hidden_states": torch.randn(1, seq, dim), "cos": cos, "sin": sin}


class TableAttention(nn.Module):
    """q and k rotated by `rotate(table, x)`: the complex and matrix forms, whose one table holds cos and sin."""

    def __init__(self, rotate, dim: int = 32, heads: int = 2):
        super().__init__()
        self.rotate, self.heads = rotate, heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden_states, freqs_cis):
        b, s, d = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        q, k = self.rotate(freqs_cis, q), self.rotate(freqs_cis, k)
        attn = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.out(attn.transpose(1, 2).reshape(b, s, d))


def complex_pairs(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim // heads)
    freqs_cis = torch.polar(torch.ones_like(angles), angles)  # cos + i sin: [S, D/2]
    return TableAttention(complex_rope, dim, heads), {"hidden_states": torch.randn(1, seq, dim), "freqs_cis": freqs_cis}


def rotation_matrices(seq: int = 8, dim: int = 32, heads: int = 2):
    torch.manual_seed(0)
    angles = _angles(seq, dim // heads)
    cos, sin = angles.cos(), angles.sin()
    matrices = torch.stack([cos, -sin, sin, cos], dim=-1).view(seq, -1, 2, 2)[None, :, None]  # [1, S, 1, D/2, 2, 2]
    return TableAttention(apply_rope, dim, heads), {"hidden_states": torch.randn(1, seq, dim), "freqs_cis": matrices}
