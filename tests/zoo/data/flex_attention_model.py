"""A block whose attention is torch.nn.attention.flex_attention: in eager mode it compiles its own kernel, so
dynamo runs inside the forward sdcompile records."""

import torch
from torch import nn
from torch.nn.attention.flex_attention import flex_attention


class Block(nn.Module):
    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.norm_q = nn.RMSNorm(dim // heads)
        self.norm_k = nn.RMSNorm(dim // heads)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k = self.norm_q(q), self.norm_k(k)
        o = flex_attention(q, k, v)
        return self.out(o.transpose(1, 2).reshape(b, s, d))


def build():
    torch.manual_seed(0)
    return Block(), {"x": torch.randn(1, 8, 32)}
