"""debug's anchor candidates: an indexed write is a RoPE candidate only when it stores one lane pair of a rotation
(a sum or difference of two products, Wan's `out[..., 0::2] = x1 * cos - x2 * sin`); other indexed writes
(Lumina2's `position_ids[i, :n, 0] = torch.arange(n)`) are not sites any RoPE pattern could match; a LayerNorm is an
AdaLN candidate only when it is modulated: multiplied by `1 + scale`, or scaled and shifted by a value not computed
from it (Wan's affine cross-attention norm feeds a projection, CogVideoX's q/k norm feeds RoPE)."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch.fx.experimental.proxy_tensor import make_fx


def _strided_write_rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out


def _position_ids(ids):
    ids = ids.clone()
    ids[0, :4, 0] = torch.arange(4, dtype=ids.dtype)
    return ids * 2


def _candidates(fn, *args, op: str = "rope"):
    from sdcompile.core.graph.candidates import anchor_sites, op_anchors

    # functionalized, as the AOT graph the pattern pass sees: indexed writes become slice_scatter
    gm = make_fx(torch.func.functionalize(fn, remove="mutations_and_views"))(*args)
    stage = SimpleNamespace(gm=gm, graph_index=0)
    return anchor_sites(stage, op_anchors(op), [])


def _modulated_norm(x, scale, shift):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-6) * (1 + scale[:, None]) + shift[:, None]


def _affine_norm_into_a_projection(x, weight, bias, proj):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps=1e-6) @ proj


def _qk_norm_then_rope(q, cos, sin):
    """CogVideoX's attention: a LayerNorm on q, then RoPE multiplies it by cos and adds the rotated q times sin."""
    q = torch.nn.functional.layer_norm(q, q.shape[-1:], eps=1e-6)
    q1, q2 = q.chunk(2, dim=-1)
    return q * cos + torch.cat([-q2, q1], dim=-1) * sin


def test_a_layer_norm_is_an_adaln_candidate_only_when_it_is_modulated():
    x = torch.randn(2, 8, 16)
    scale, shift = 0.1 * torch.randn(2, 16), 0.1 * torch.randn(2, 16)
    sites = _candidates(_modulated_norm, x, scale, shift, op="adaln")
    assert len(sites) == 1 and "native_layer_norm" in sites[0].found_by[0], sites
    weight, bias = 1 + 0.1 * torch.randn(16), 0.1 * torch.randn(16)
    assert _candidates(_affine_norm_into_a_projection, x, weight, bias, torch.randn(16, 16), op="adaln") == []
    angles = torch.arange(8.0)[:, None] * torch.rand(1, 8)
    cos, sin = torch.cat([angles.cos()] * 2, dim=-1), torch.cat([angles.sin()] * 2, dim=-1)
    assert _candidates(_qk_norm_then_rope, x, cos, sin, op="adaln") == []
    scale_only = _candidates(lambda v, s: torch.nn.functional.layer_norm(v, v.shape[-1:]) * (1 + s[:, None]),
                             x, scale, op="adaln")
    assert len(scale_only) == 1


def test_a_strided_write_of_a_rotation_is_a_rope_candidate():
    angles = torch.arange(8.0)[:, None] * torch.rand(1, 4)
    sites = _candidates(_strided_write_rope, torch.randn(1, 8, 2, 8), angles.cos()[:, None], angles.sin()[:, None])
    assert sites, "the rotation's strided writes are where a RoPE pattern must match"
    assert any("slice_scatter" in label for site in sites for label in site.found_by)


def test_an_indexed_write_of_anything_else_is_not():
    assert _candidates(_position_ids, torch.zeros(1, 8, 3, dtype=torch.int32)) == []


def _rotation_table_builder(positions):
    """HiDream's EmbedND: 2 x 2 rotation matrices [[cos, -sin], [sin, cos]] built from angles."""
    angles = positions[:, None] * torch.linspace(0.1, 1.0, 4)
    return torch.stack([angles.cos(), -angles.sin(), angles.sin(), angles.cos()], dim=-1).view(-1, 4, 2, 2) * 1.0


def _rotate_half(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def test_a_negated_sin_of_positions_builds_a_table_and_is_no_candidate():
    assert _candidates(_rotation_table_builder, torch.arange(8.0)) == []
    angles = torch.arange(8.0)[:, None] * torch.rand(1, 4)
    cos, sin = torch.cat([angles.cos()] * 2, -1)[:, None], torch.cat([angles.sin()] * 2, -1)[:, None]
    sites = _candidates(_rotate_half, torch.randn(1, 8, 2, 8), cos, sin)  # the negation of x2 is
    assert [label.split(" (")[0] for site in sites for label in site.found_by] == ["anchor aten.neg.default"]
