"""A block that pads per-sample token runs into one batch with in-place writes (as Lumina 2 packs caption and image
tokens), then normalises them: the compile functionalises each write into scatters."""

import torch
from torch import nn


class PaddedNorm(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.proj = nn.Linear(dim, dim)
        with torch.no_grad():
            self.norm.weight.copy_(1 + 0.1 * torch.randn(dim))

    def forward(self, tokens, lengths: list[int]):
        b, s, d = tokens.shape
        padded = tokens.new_zeros(b, s, d)
        for i, n in enumerate(lengths):
            padded[i, :n] = self.proj(tokens[i, :n])
        return self.norm(padded)


def padded_norm(batch: int = 4, seq: int = 16, dim: int = 32):
    torch.manual_seed(0)
    return PaddedNorm(dim), {"tokens": torch.randn(batch, seq, dim), "lengths": [16, 12, 9, 5]}


class PaddedFusedNorm(PaddedNorm):
    """The same block normalised by diffusers' RMSNorm, which calls torch_npu.npu_rms_norm itself on an NPU host."""

    def __init__(self, dim: int = 32):
        from diffusers.models.normalization import RMSNorm

        super().__init__(dim)
        self.norm = RMSNorm(dim, eps=1e-6)
        with torch.no_grad():
            self.norm.weight.copy_(1 + 0.1 * torch.randn(dim))


def padded_fused_norm(batch: int = 4, seq: int = 16, dim: int = 32):
    torch.manual_seed(0)
    return PaddedFusedNorm(dim), {"tokens": torch.randn(batch, seq, dim), "lengths": [16, 12, 9, 5]}
