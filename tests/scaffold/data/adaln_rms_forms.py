"""AdaLN after an RMSNorm, as diffusers writes it, in hand-written blocks for `--model-file`: the modulation
`rms_norm(x) * (1 + scale) + shift` (LTX, LTX 2, Lumina 2, Z-Image, MiniMax-H3). The conditioning goes through a SiLU
and a linear, so scale and shift are computed values; the RMSNorm is a module of its own, as in those models.

    table      scale/shift [B, 1, D] from a scale_shift_table plus the conditioning (LTX's blocks)
    per_token  scale/shift [B, S, D] (per-token modulation)
    viewed     scale [B, D], viewed to [B, 1, D] inside the modulation; no shift (Lumina 2's norm1)
    plus_one   1 + scale computed a line before the multiply, no shift (Z-Image's blocks)
    mixed      a LayerNorm modulation and an RMSNorm one of the same x in one class: two forms, one scaffold run
    two_paths  the same with the LayerNorm modulation scale-only (Lumina 2's norm_out): where registration decomposes
               the LayerNorm, it takes a graph pass and the RMSNorm one a pattern (which cannot take it)
"""

import torch
from torch import nn


def _rms_norm(dim: int) -> nn.RMSNorm:
    """An RMSNorm with its own weight, perturbed from 1: the target's RMSNorm groups replace `norm(x) * weight`, and
    without a weight of its own the modulation's multiply is what they would take for one."""
    norm = nn.RMSNorm(dim, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.1 * torch.randn(dim))
    return norm


class RmsModulation(nn.Module):
    """An RMSNorm module and the modulation of its output, in the shape `form` says."""

    def __init__(self, form: str, dim: int):
        super().__init__()
        self.form = form
        self.norm = _rms_norm(dim)
        self.linear = nn.Linear(dim, 2 * dim)
        self.table = nn.Parameter(torch.randn(2, dim) / dim**0.5)

    def forward(self, x, emb):
        normed = self.norm(x)
        if self.form == "table":  # emb [B, 1, D]: table rows plus the conditioning, unbound
            shift, scale = (self.table[None, None] + self.linear(nn.functional.silu(emb)).unflatten(-1, (2, -1)))\
                .unbind(dim=2)
            return normed * (1 + scale) + shift
        shift, scale = self.linear(nn.functional.silu(emb)).chunk(2, dim=-1)
        if self.form == "per_token":  # emb [B, S, D]
            return normed * (1 + scale) + shift
        if self.form == "viewed":  # emb [B, D]
            return normed * (1 + scale[:, None])
        scale = 1.0 + scale  # plus_one: emb [B, 1, D]
        return normed * scale


class MixedModulation(nn.Module):
    """A LayerNorm modulation (mindiesd::adaln's chain) and an RMSNorm one (scale_shift's) of the same x, each norm
    a module of the block (as in LTX and Z-Image, where the final layer's norm is a LayerNorm)."""

    def __init__(self, dim: int, layer_norm_shifted: bool = True):
        super().__init__()
        self.layer_norm_shifted = layer_norm_shifted
        self.linear = nn.Linear(dim, 4 * dim)

    def forward(self, layer_normed, rms_normed, emb):
        shift1, scale1, shift2, scale2 = self.linear(nn.functional.silu(emb)).chunk(4, dim=-1)
        first = layer_normed * (1 + scale1) + shift1 if self.layer_norm_shifted else layer_normed * (1 + scale1)
        return first, rms_normed * (1 + scale2) + shift2


class Block(nn.Module):
    def __init__(self, form: str, dim: int):
        super().__init__()
        self.form = form
        self.modulation = (MixedModulation(dim, form == "mixed") if form in ("mixed", "two_paths") else
                           RmsModulation(form, dim))
        self.layer_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.rms_norm = _rms_norm(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, emb):
        if self.form in ("mixed", "two_paths"):
            first, second = self.modulation(self.layer_norm(x), self.rms_norm(x), emb)
            return x + self.proj(first) + self.proj(second)
        return x + self.proj(self.modulation(x, emb))


class Transformer(nn.Module):
    def __init__(self, form: str, dim: int, layers: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(form, dim) for _ in range(layers))

    def forward(self, hidden_states, emb):
        for block in self.blocks:
            hidden_states = block(hidden_states, emb)
        return hidden_states


def _build(form: str, emb_tokens: int | None, seq: int = 6, dim: int = 32):
    torch.manual_seed(0)
    emb_shape = (2, dim) if emb_tokens is None else (2, emb_tokens, dim)
    return Transformer(form, dim), {"hidden_states": torch.randn(2, seq, dim), "emb": torch.randn(emb_shape)}


def table():
    return _build("table", 1)


def per_token():
    return _build("per_token", 6)


def viewed():
    return _build("viewed", None)


def plus_one():
    return _build("plus_one", 1)


def mixed():
    return _build("mixed", 1)


def two_paths():
    return _build("two_paths", 1)
