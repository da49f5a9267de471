"""Two RMSNorm blocks with a routing step between them that dynamo cannot trace (a dynamic-shape bincount): the
forward is two graphs, the break at the bincount's line."""

import torch


class Block(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = torch.nn.RMSNorm(dim, eps=1e-6)
        self.proj = torch.nn.Linear(dim, dim)
        with torch.no_grad():
            self.norm.weight.copy_(torch.linspace(0.5, 1.5, dim))

    def forward(self, x):
        return x + self.proj(self.norm(x))


class Routed(torch.nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.first, self.second = Block(dim), Block(dim)

    def forward(self, hidden_states):
        x = self.first(hidden_states)
        per_expert = torch.bincount((x[..., 0] > 0).long().flatten())  # routing: its size depends on the data
        return self.second(x) * per_expert.numel()


def build():
    torch.manual_seed(0)
    return Routed(), {"hidden_states": torch.randn(1, 16, 32)}
