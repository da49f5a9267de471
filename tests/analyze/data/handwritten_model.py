"""A hand-written transformer block (no diffusers) for `--model-file`: its own RMSNorm class, a RoPE function,
an inline AdaLN-style modulation and a tanh GELU, as user code typically has them."""

import torch
from torch import nn


class MyRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return (x * self.weight).to(self.weight.dtype)


class ScaleNorm(nn.Module):
    """An RMSNorm by another name: only its operations say what it is."""

    def __init__(self, dim: int):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.gain


def rotate_with_freqs(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * cos + rotated * sin


class Block(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.modulation = nn.Linear(dim, 2 * dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.q_norm = MyRMSNorm(dim // heads)
        self.k_norm = ScaleNorm(dim // heads)
        self.proj = nn.Linear(dim, dim)
        self.mlp_in = nn.Linear(dim, 2 * dim)
        self.mlp_out = nn.Linear(2 * dim, dim)

    def forward(self, hidden_states, temb, cos, sin):
        b, s, d = hidden_states.shape
        shift, scale = self.modulation(nn.functional.silu(temb)).chunk(2, dim=-1)
        h = self.norm(hidden_states) * (1 + scale[:, None]) + shift[:, None]
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        q, k = self.q_norm(q), self.k_norm(k)
        q, k = rotate_with_freqs(q, cos, sin), rotate_with_freqs(k, cos, sin)
        attn = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        hidden_states = hidden_states + self.proj(attn.transpose(1, 2).reshape(b, s, d))
        ff = nn.functional.gelu(self.mlp_in(hidden_states), approximate="tanh")
        return hidden_states + self.mlp_out(ff)


def build():
    torch.manual_seed(0)
    block = Block()
    s, half = 8, 8
    angles = torch.arange(s)[:, None] * torch.arange(half)[None, :] / half
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[None, :, None, :]
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[None, :, None, :]
    return block, {"hidden_states": torch.randn(1, s, 32), "temb": torch.randn(1, 32), "cos": cos, "sin": sin}


def not_a_pair():
    return nn.Linear(2, 2)


def build_geglu():
    """A diffusers FeedForward with GEGLU: diffusers itself calls torch_npu.npu_geglu on an NPU host."""
    from diffusers.models.attention import FeedForward

    torch.manual_seed(0)
    return FeedForward(16, activation_fn="geglu"), {"hidden_states": torch.randn(1, 8, 16)}


@torch.library.custom_op("sdcompile_test::opaque", mutates_args=())
def opaque(x: torch.Tensor) -> torch.Tensor:
    """A custom op without a fake kernel: eager runs it, torch.compile cannot trace it."""
    return x.clone()


class OpaqueBlock(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.norm = MyRMSNorm(dim)

    def forward(self, hidden_states):
        return opaque(self.norm(hidden_states))


def build_uncompilable():
    torch.manual_seed(0)
    return OpaqueBlock(), {"hidden_states": torch.randn(1, 4, 16)}


def build_wrong_inputs():
    torch.manual_seed(0)
    return Block(), {"hidden_states": torch.randn(1, 8, 32)}  # temb, cos, sin missing
