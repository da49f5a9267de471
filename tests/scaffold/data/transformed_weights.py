"""Norms whose chain transforms the weight before the point where a fused RMSNorm takes it, for `--model-file`.

The weights are drawn around their stored value (not left at zeros/ones), as a trained checkpoint holds them.
"""

import torch
from torch import nn


class ZeroCenteredRMSNorm(nn.Module):
    """Stores `scale - 1` and computes with `weight + 1` in float32, as QwenImage 2.1's text norm does."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        hidden_states = hidden_states.float()
        rrms = torch.rsqrt(hidden_states.pow(2).mean(-1, keepdim=True) + self.eps)
        return (hidden_states * rrms * (self.weight.float() + 1)).to(dtype)


class SquaredGainNorm(nn.Module):
    """Applies its gain twice after normalising: no single value of the gain makes one fused RMSNorm equal it."""

    def __init__(self, dim: int):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.gain * self.gain


class Block(nn.Module):
    def __init__(self, norm: nn.Module, dim: int = 32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = norm
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        return self.out(self.norm(self.proj(hidden_states)))


def _built(norm: nn.Module, dim: int = 32):
    torch.manual_seed(0)
    block = Block(norm, dim)
    with torch.no_grad():
        for p in norm.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return block, {"hidden_states": torch.randn(1, 8, dim)}


def zero_centered():
    return _built(ZeroCenteredRMSNorm(32))


def qwenimage21_text_norm():
    """diffusers' own QwenImage 2.1 zero-centred norm."""
    from diffusers.models.transformers.transformer_qwenimage21 import QwenImage21ZeroCenterRMSNorm

    return _built(QwenImage21ZeroCenterRMSNorm(32, eps=1e-6))


def krea2_norm():
    """diffusers' Krea 2 norm: F.rms_norm with weight=self.weight + 1.0."""
    from diffusers.models.transformers.transformer_krea2 import Krea2RMSNorm

    return _built(Krea2RMSNorm(32, eps=1e-6))


def squared_gain():
    return _built(SquaredGainNorm(32))


def zero_centered_rms_norm(x, gain, eps: float = 1e-6):
    """The zero-centred norm as a function of a gain computed at run time (a conditioning's projection)."""
    rrms = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    return (x.float() * rrms * (gain.float() + 1)).to(x.dtype)


class ConditionedBlock(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.to_gain = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden_states, temb):
        return self.out(zero_centered_rms_norm(self.proj(hidden_states), 0.1 * self.to_gain(temb)))


def conditioned_gain():
    torch.manual_seed(0)
    return ConditionedBlock(), {"hidden_states": torch.randn(1, 8, 32), "temb": torch.randn(32)}
