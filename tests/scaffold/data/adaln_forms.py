"""AdaLN as diffusers writes it, in hand-written blocks for `--model-file`: one modulated LayerNorm per block, in
each shape diffusers uses. The conditioning goes through a SiLU and a linear, as in diffusers, so scale and shift
are real computed values; LayerNorm weights (where the norm has them) are perturbed from 1 and 0.

    per_batch      scale/shift [B, D], unsqueezed to [B, 1, D] inside the norm (AdaLayerNormZero)
    per_batch_3d   scale/shift [B, 1, D] (the Wan family's scale_shift_table, OmniGen, Sana)
    per_token      scale/shift [B, S, D] (per-token modulation, Flux 3)
    scale_only     x * (1 + scale), no shift (QwenImage 2.1)
    affine         a LayerNorm with its own weight and bias, then the modulation (CogVideoX's LayerNormZero)
    inline         two modulations a block writes inline, each after its own LayerNorm module (Flux's and Wan's
                   blocks): one site holding two chains, neither holding its norm
    shared_norm    one LayerNorm modulated twice (SD3.5's AdaLayerNormZeroX): two chains sharing their norm
    scalar_shift   a shift of one value per sample, [B, 1, 1]: no recipe role takes it (mindiesd::adaln's shift has x's
                   last dim), so nothing sdcompile generates covers it
"""

import torch
from torch import nn


class AdaLayerNormShapes(nn.Module):
    """`norm(x) * (1 + scale) + shift`, scale and shift in the shape `form` says."""

    def __init__(self, form: str, dim: int, affine: bool = False):
        super().__init__()
        self.form = form
        self.linear = nn.Linear(dim, 2 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=affine, eps=1e-6)
        if affine:
            with torch.no_grad():
                self.norm.weight.copy_(1 + 0.1 * torch.randn(dim))
                self.norm.bias.copy_(0.1 * torch.randn(dim))

    def forward(self, x, emb):
        shift, scale = self.linear(nn.functional.silu(emb)).chunk(2, dim=-1)
        if self.form == "scale_only":
            return self.norm(x) * (1 + scale[:, None])
        if self.form in ("per_batch", "affine"):
            return self.norm(x) * (1 + scale[:, None]) + shift[:, None]
        if self.form == "scalar_shift":
            return self.norm(x) * (1 + scale[:, None]) + shift.mean(-1)[:, None, None]
        return self.norm(x) * (1 + scale) + shift  # emb is [B, 1, D] or [B, S, D]: broadcast as it is


class SharedNormModulations(nn.Module):
    """`norm(x)` once, modulated twice: one value for attention, one for the feed-forward."""

    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, 4 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, emb):
        shift1, scale1, shift2, scale2 = self.linear(nn.functional.silu(emb)).chunk(4, dim=-1)
        normed = self.norm(x)
        return normed * (1 + scale1[:, None]) + shift1[:, None], normed * (1 + scale2[:, None]) + shift2[:, None]


class Block(nn.Module):
    def __init__(self, form: str, dim: int, affine: bool = False):
        super().__init__()
        self.norm1 = AdaLayerNormShapes(form, dim, affine)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, emb):
        return hidden_states + self.proj(self.norm1(hidden_states, emb))


class SharedNormBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm1 = SharedNormModulations(dim)
        self.attn, self.ff = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, hidden_states, emb):
        for_attn, for_ff = self.norm1(hidden_states, emb)
        return hidden_states + self.attn(for_attn) + self.ff(for_ff)


class InlineBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.modulation = nn.Linear(dim, 4 * dim)
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn, self.ff = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, hidden_states, emb):
        shift1, scale1, shift2, scale2 = self.modulation(nn.functional.silu(emb)).chunk(4, dim=-1)
        norm_hidden_states = self.norm1(hidden_states)
        norm_hidden_states = norm_hidden_states * (1 + scale1[:, None]) + shift1[:, None]
        hidden_states = hidden_states + self.attn(norm_hidden_states)
        norm_hidden_states = self.norm2(hidden_states)
        norm_hidden_states = norm_hidden_states * (1 + scale2[:, None]) + shift2[:, None]
        return hidden_states + self.ff(norm_hidden_states)


class CastingInlineBlock(nn.Module):
    """Kandinsky 5's block: each modulation computed in float32 from `x.float()` and cast back to x's dtype."""

    def __init__(self, dim: int):
        super().__init__()
        self.modulation = nn.Linear(dim, 4 * dim)
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False)
        self.attn, self.ff = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x, emb):
        shift1, scale1, shift2, scale2 = self.modulation(nn.functional.silu(emb)).unsqueeze(1).chunk(4, dim=-1)
        out = (self.norm1(x.float()) * (scale1.float() + 1.0) + shift1.float()).type_as(x)
        x = x + self.attn(out)
        out = (self.norm2(x.float()) * (scale2.float() + 1.0) + shift2.float()).type_as(x)
        return x + self.ff(out)


class Transformer(nn.Module):
    def __init__(self, form: str, dim: int = 32, affine: bool = False):
        super().__init__()
        blocks = {"inline": lambda: InlineBlock(dim), "shared_norm": lambda: SharedNormBlock(dim),
                  "casting_inline": lambda: CastingInlineBlock(dim)}
        block = blocks.get(form, lambda: Block(form, dim, affine))
        self.blocks = nn.ModuleList([block() for _ in range(2)])
        # the first block then takes a norm's output as it is (Kandinsky 5's text embeddings)
        self.embed_norm = nn.LayerNorm(dim) if form == "casting_inline" else None

    def forward(self, hidden_states, emb):
        if self.embed_norm is not None:
            hidden_states = self.embed_norm(hidden_states)
        for block in self.blocks:
            hidden_states = block(hidden_states, emb)
        return hidden_states


def _build(form: str, emb_tokens: int | None, affine: bool = False, seq: int = 6, dim: int = 32):
    torch.manual_seed(0)
    emb = torch.randn(2, dim) if emb_tokens is None else torch.randn(2, emb_tokens, dim)
    return Transformer(form, dim, affine), {"hidden_states": torch.randn(2, seq, dim), "emb": emb}


def per_batch():
    return _build("per_batch", None)


def per_batch_3d():
    return _build("per_batch_3d", 1)


def per_token():
    return _build("per_token", 6)


def scale_only():
    return _build("scale_only", None)


def affine():
    return _build("affine", None, affine=True)


def inline():
    return _build("inline", None)


def shared_norm():
    return _build("shared_norm", None)


def scalar_shift():
    return _build("scalar_shift", None)


def casting_inline():
    return _build("casting_inline", None)
