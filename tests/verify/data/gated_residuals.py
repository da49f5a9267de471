"""Residual gates as models write them: a per-sample gate ([B, 1, D], Wan's), a per-token gate ([B, S, D], as models
with per-token timesteps write it), and the gate bound first (Qwen-Image's `hidden + gate * output`)."""

import torch
from torch import nn


class GatedResidual(nn.Module):
    def __init__(self, dim: int = 64, gate_first: bool = False):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.mod = nn.Linear(dim, dim)
        self.gate_first = gate_first

    def forward(self, hidden, cond):
        out = self.proj(hidden)
        gate = self.mod(cond)  # [B, 1, D] or [B, S, D]: cond's shape
        return hidden + gate * out if self.gate_first else hidden + out * gate


def _inputs(batch: int, seq: int, dim: int, gate_tokens: int):
    g = torch.Generator().manual_seed(0)
    return {"hidden": torch.randn(batch, seq, dim, generator=g).bfloat16(),
            "cond": torch.randn(batch, gate_tokens, dim, generator=g).bfloat16()}


def per_sample_gate(batch: int = 2, seq: int = 32, dim: int = 64):
    torch.manual_seed(0)
    return GatedResidual(dim).bfloat16(), _inputs(batch, seq, dim, 1)


def per_token_gate(batch: int = 2, seq: int = 32, dim: int = 64):
    torch.manual_seed(0)
    return GatedResidual(dim).bfloat16(), _inputs(batch, seq, dim, seq)


def gate_first(batch: int = 1, seq: int = 32, dim: int = 64):
    torch.manual_seed(0)
    return GatedResidual(dim, gate_first=True).bfloat16(), _inputs(batch, seq, dim, 1)


class Modulated(nn.Module):
    """x * (1 + scale) + shift after a LayerNorm, with [B, 1, D] modulation."""

    def __init__(self, dim: int = 64):
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.mod = nn.Linear(dim, 2 * dim)

    def forward(self, hidden, cond):
        scale, shift = self.mod(cond).chunk(2, dim=-1)
        return self.norm(hidden) * (1 + scale) + shift


def modulated(batch: int = 2, seq: int = 16, dim: int = 64):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    return Modulated(dim), {"hidden": torch.randn(batch, seq, dim, generator=g),
                            "cond": torch.randn(batch, 1, dim, generator=g)}


class HeadwiseGate(nn.Module):
    """A residual gated per head on 4-D activations ([B, S, H, D]): the generic residual gate matches it, and its
    Triton kernel takes only 3-D inputs, so at run time it falls back to eager (`fallback (ndim)`)."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden, gate):
        return hidden + self.proj(hidden) * gate


def headwise_gate(batch: int = 1, seq: int = 8, heads: int = 2, dim: int = 32):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    return HeadwiseGate(dim), {"hidden": torch.randn(batch, seq, heads, dim, generator=g),
                               "gate": torch.randn(batch, seq, 1, dim, generator=g)}
