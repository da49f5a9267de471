"""A hand-written block for `--model-file` whose RoPE runs only when its tables are passed (`rope`), and whose
GELU sits behind a flag set at construction: what `analyze` says of primitives the source holds and a forward
did not run."""

import torch
from torch import nn


def apply_rope(x, rope):
    cos, sin = rope
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class RopeBlock(nn.Module):
    def __init__(self, dim: int = 16, tanh_gelu: bool = False):
        super().__init__()
        self.tanh_gelu = tanh_gelu
        self.qk = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden_states, rope=None):
        q, k = self.qk(hidden_states).chunk(2, dim=-1)
        if rope is not None:
            q = apply_rope(q, rope)
            k = apply_rope(k, rope)
        h = torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ hidden_states
        if self.tanh_gelu:
            h = nn.functional.gelu(h, approximate="tanh")
        else:
            h = nn.functional.silu(h)
        return hidden_states + self.out(h)


def _tables(seq: int, dim: int):
    angles = torch.arange(seq)[:, None] * torch.arange(dim // 2)[None, :] / dim
    return torch.cat([angles.cos()] * 2, dim=-1), torch.cat([angles.sin()] * 2, dim=-1)


def build():
    """The tables left out: the forward takes `rope`'s default, None."""
    torch.manual_seed(0)
    return RopeBlock(), {"hidden_states": torch.randn(1, 8, 16)}


def build_with_rope():
    torch.manual_seed(0)
    return RopeBlock(), {"hidden_states": torch.randn(1, 8, 16), "rope": _tables(8, 16)}
