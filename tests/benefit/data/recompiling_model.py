"""Attention-style q/k RMSNorm (torch.rms_norm over heads, as the tree's RMSNorm group matches it) in a block that
caches a value on its first compiled call, as models that keep state do: the second call fails the guard on it and
dynamo compiles the forward once more."""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim=64, heads=2):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(dim, 2 * dim)
        self.weight_q = nn.Parameter(1 + 0.1 * torch.randn(dim // heads))
        self.weight_k = nn.Parameter(1 + 0.1 * torch.randn(dim // heads))
        self.scale = None

    def forward(self, x):
        if self.scale is None and torch.compiler.is_compiling():
            self.scale = 0.5  # set by the first compiled call: the next call is compiled again
        b, s, _ = x.shape
        q, k = self.proj(x).view(b, s, 2, self.heads, -1).unbind(2)
        q = F.rms_norm(q, (q.shape[-1],), self.weight_q, 1e-6)
        k = F.rms_norm(k, (k.shape[-1],), self.weight_k, 1e-6)
        out = torch.cat([q, k], dim=-1)
        return out * self.scale if self.scale is not None else out


def build():
    torch.manual_seed(0)
    return Block().to(torch.bfloat16), {"x": torch.randn(1, 16, 64, dtype=torch.bfloat16)}
