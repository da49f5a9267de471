"""GELU sites of two kinds: feed-forwards with the tanh approximation (what the fused GELU computes) and a projector
with the exact GELU (erf), which no fused GELU of the target computes, as GLM-Image's glyph projector has."""

import torch
from diffusers.models.activations import GELU


class Block(torch.nn.Module):
    def __init__(self, dim: int, approximate: str):
        super().__init__()
        self.act = GELU(dim, 2 * dim, approximate=approximate)
        self.out = torch.nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.out(self.act(x))


class Mixed(torch.nn.Module):
    def __init__(self, dim: int = 32, approximations: tuple[str, ...] = ("none", "tanh", "tanh")):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(dim, a) for a in approximations)

    def forward(self, hidden_states):
        for block in self.blocks:
            hidden_states = block(hidden_states)
        return hidden_states


def build():
    torch.manual_seed(0)
    return Mixed(), {"hidden_states": torch.randn(1, 16, 32)}


def build_exact():
    torch.manual_seed(0)
    return Mixed(approximations=("none",)), {"hidden_states": torch.randn(1, 16, 32)}
