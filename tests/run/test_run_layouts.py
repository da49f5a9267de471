"""Lifecycles on layouts and targets a tuned model would not show: tokens held sequence-first, flattened or modulated
per token, tables a RoPE function builds itself, and a target group whose fused call computes something else on the
NPU for this model."""

from __future__ import annotations

import json

import pytest

from sdcompile.core.torchcompat.behaviours import holds

# An attention rotating q and k with `rotate(x, tables)`, one of the forms below; tables from real angles.
ROPE_MODEL = '''
import torch

{rotate}

class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.to_q, self.to_k, self.to_out = torch.nn.Linear(32, 32), torch.nn.Linear(32, 32), torch.nn.Linear(32, 32)

    def forward(self, x, tables):
        q = rotate(self.to_q(x).unflatten(-1, (2, 16)), tables)
        k = rotate(self.to_k(x).unflatten(-1, (2, 16)), tables)
        return self.to_out((q * k.softmax(dim=-1)).flatten(2))


def build():
    torch.manual_seed(0)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 16, 2).float() / 16))
    angles = torch.arange(24).float()[:, None] * inv_freq[None, :]  # [S, D / 2]
    pairs = torch.stack([angles, angles], dim=-1).reshape(24, 16)  # each angle over its pair of lanes
    {tables}
    return Attention(), {{"x": torch.randn(1, 24, 32), "tables": tables}}
'''

ROTATIONS = {
    # cos and sin made from the angles inside the function, as ERNIE-Image's processor does; pair-duplicated angles
    # rotated by halves
    "angles": ('''
def rotate(x, freqs):
    cos, sin = torch.cos(freqs).to(x.dtype), torch.sin(freqs).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin
''', "tables = pairs[None, :, None, :]"),
    # one packed table split into cos and sin inside the function, lanes rotated pairwise and written back
    # interleaved, each table's lanes selected once per product (Helios's form)
    "packed": ('''
def rotate(x, freqs):
    x_1, x_2 = x.unflatten(-1, (-1, 2)).unbind(-1)
    cos, sin = freqs.unsqueeze(-2).chunk(2, dim=-1)
    out = torch.empty_like(x)
    out[..., 0::2] = x_1 * cos[..., 0::2] - x_2 * sin[..., 1::2]
    out[..., 1::2] = x_1 * sin[..., 1::2] + x_2 * cos[..., 0::2]
    return out.type_as(x)
''', "tables = torch.cat([pairs.cos(), pairs.sin()], dim=-1)[None]  # [1, S, 2 * D]: cos then sin"),
    # the leading 8 of 16 channels rotated, in float32, the rest passed through, by 3-D tables broadcast against the
    # 4-D x (MiniMax-Music's partial rotation: npu_rotary_mul takes its tables at x's rank)
    "partial": ('''
def rotate(x, tables):
    cos, sin = tables
    part, rest = x[..., :8].float(), x[..., 8:]
    x1, x2 = part.chunk(2, dim=-1)
    rotated = part * cos + torch.cat((-x2, x1), dim=-1) * sin
    return torch.cat((rotated.to(x.dtype), rest), dim=-1)
''', "tables = (angles[:, :4].repeat(1, 2).cos()[:, None], angles[:, :4].repeat(1, 2).sin()[:, None])  # [S, 1, 8]"),
    # each pair of lanes times its 2 x 2 rotation matrix, the product summed over the pair (Kandinsky 5's form)
    "matrices": ('''
def rotate(x, rope):
    x_ = x.reshape(*x.shape[:-1], -1, 1, 2).to(torch.float32)
    return (rope * x_).sum(dim=-1).reshape(*x.shape).to(x.dtype)
''', "tables = torch.stack([angles.cos(), -angles.sin(), angles.sin(), angles.cos()], dim=-1)"
     ".view(24, 8, 2, 2)[None, :, None]"),
}


def _summaries(out) -> dict[str, str]:
    return {p["phase"]: p["summary"] for p in json.loads(out.stdout)["phases"]}


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 2])
def test_adaln_on_sequence_first_tokens_is_fused_on_the_transposed_tokens(cli, tmp_path, batch):
    """With one sample the transposed tokens are the same memory ([S, 1, D] as [1, S, D]); with two the NPU kernel
    needs them contiguous, and copy-audit finds the two copies the transposes cost: a hit that may not gain."""
    # tokens held [S, B, D] (as ERNIE-Image does): the modulation [B, D] broadcasts along the sequence; S = 16 and B
    # samples, so as they are the shapes fit no batch-first layout
    modulate = "x = self.norm(x) * (1 + scale.unsqueeze(0)) + shift.unsqueeze(0)"
    (tmp_path / "seq_first.py").write_text(OTHER_LAYOUTS.format(modulate=modulate, x=f"16, {batch}, 64",
                                                                conditioning=f"{batch}, 64"))
    out = cli("run", "--model-file", "seq_first.py:build", "--name", "seqfirst", "--op", "adaln", "--json",
              cwd=tmp_path)
    summaries = _summaries(out)
    assert "1 site(s) get a generated replacement" in summaries["scaffold"], summaries
    scaffold = json.loads((tmp_path / ".sdcompile/seq_first-build/adaln/scaffold/scaffold.json").read_text())
    (variant,) = scaffold["variants"]
    # the op takes x [B, S, D] and the modulation [B, D]: x goes in transposed, the result comes back so
    assert "x.transpose(0, 1)" in variant["replacement"], variant["replacement"]
    assert variant["replacement"].endswith(".transpose(0, 1)"), variant["replacement"]
    assert "seq_first-build: 1 replacement(s)" in summaries["verify"], summaries
    assert "layer 3 regression: pass" in summaries["integrate"], summaries
    if batch == 1:
        assert out.exit_code == 0, out.stdout[-3000:] + out.stderr[-3000:]
    else:
        assert out.exit_code == 1 and "copy kernels 0 -> 2" in summaries["copy-audit"], summaries
        assert "with them 2: they add copies" in summaries["copy-audit"], summaries


# A final layer in other layouts than [B, S, D] with [B, D] modulation: the op takes x and its modulation viewed so.
OTHER_LAYOUTS = '''
import torch


class FinalLayer(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.linear = torch.nn.Linear(dim, 2 * dim)
        self.proj = torch.nn.Linear(dim, 8)

    def forward(self, x, conditioning):
        scale, shift = self.linear(conditioning).chunk(2, dim=-1)
        {modulate}
        return self.proj(x)


def build():
    torch.manual_seed(0)
    return FinalLayer(64), {{"x": torch.randn({x}), "conditioning": torch.randn({conditioning})}}
'''

LAYOUTS = {
    # a video's tokens [B, T, H, W, D] (Kandinsky 5's out layer): the middle dims flattened into one sequence
    "flattened": ("x = self.norm(x) * (1 + scale[:, None, None, None]) + shift[:, None, None, None]",
                  "2, 2, 3, 3, 64", "2, 64", "x.flatten(1, -2)"),
    # a video's tokens [B, F, S, D] modulated per frame [B, F, 1, D]: batch and frames as the op's batch
    "per frame": ("x = self.norm(x) * (1 + scale[:, :, None]) + shift[:, :, None]", "2, 3, 4, 64", "2, 3, 64",
                  "x.flatten(0, 1).flatten(1, -2)"),
    # the conditioning per token [B, S, D]: each token a row of its own
    "token rows": ("x = self.norm(x) * (1 + scale) + shift", "2, 16, 64", "2, 16, 64", "x.flatten(0, -2).unsqueeze(1)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS)
def test_adaln_in_other_layouts_is_fused_on_x_viewed_as_the_op_takes_it(cli, tmp_path, layout):
    modulate, x, conditioning, viewed = LAYOUTS[layout]
    (tmp_path / "layout.py").write_text(OTHER_LAYOUTS.format(modulate=modulate, x=x, conditioning=conditioning))
    out = cli("run", "--model-file", "layout.py:build", "--name", "layout", "--op", "adaln", "--json", cwd=tmp_path)
    assert out.exit_code == 0, out.stdout[-3000:] + out.stderr[-3000:]
    summaries = _summaries(out)
    scaffold = json.loads((tmp_path / ".sdcompile/layout-build/adaln/scaffold/scaffold.json").read_text())
    if scaffold["variants"]:
        (variant,) = scaffold["variants"]
        assert viewed in variant["replacement"] and variant["replacement"].endswith(".reshape(x.shape)"), variant
        assert "layout-build: 1 replacement(s)" in summaries["verify"], summaries
    else:  # before torch 2.12 the target's own Wan AdaLN group takes per-token modulation as it is
        assert layout == "token rows" and summaries["scaffold"].startswith("reuse"), summaries
    assert "layer 3 regression: pass" in summaries["integrate"], summaries


@pytest.mark.slow
def test_a_target_group_whose_kernel_computes_another_result_is_left_out_and_named(cli, tmp_path, mindiesd_tree):
    """ACE-Step's blocks add a gated residual that MindIE-SD's Wan residual-gate group fuses; its NPU kernel reads the
    strided operand as if it were contiguous. integrate judges the compile without that group and names it with the
    switch production needs."""
    out = cli("integrate", "--model", "AceStepTransformer1DModel", "--repo", str(mindiesd_tree), "--json",
              cwd=tmp_path)
    report = json.loads(out.stdout)
    layers = {layer["number"]: layer for layer in report["layers"]}
    assert layers[3]["verdict"] == "pass", layers[3]
    (note,) = [n for n in report["notes"] if "WanResidualGatePatternGroup" in n]
    assert "made a fused call whose NPU kernel computes another result than the op" in note, note
    assert "mindiesd::residual_gate_add at diffusers/models/transformers/ace_step_transformer.py" in note, note
    assert note.endswith("CompilationConfig.fusion_patterns.enable_wan_residual_gate = False"), note


@pytest.mark.slow
@pytest.mark.parametrize("source", ["angles", "packed", "matrices", "partial"])
def test_rope_whose_tables_the_function_builds_takes_them_as_inputs(cli, tmp_path, source):
    """The site's chain starts at x: what the function computes its tables with (cos(freqs) and sin(freqs); a packed
    table's two halves) stays in the graph, and npu_rotary_mul takes the tables; rotation matrices applied as a
    product summed over each pair are its interleaved rotation too; a rotation of x's leading channels in float32
    (a graph entry from torch 2.12 on) slices them for the op and concatenates the rest back."""
    rotate, tables = ROTATIONS[source]
    (tmp_path / "tables.py").write_text(ROPE_MODEL.format(rotate=rotate, tables=tables))
    out = cli("run", "--model-file", "tables.py:build", "--name", "tables", "--op", "rope", "--json", cwd=tmp_path)
    summaries = _summaries(out)
    if source == "partial" and not holds("decomposition-override"):
        # before torch 2.12 the chain is a pattern, whose replacement calls MindIE-SD's rotary_position_embedding:
        # its own check refuses 3-D tables (the graph entry pads them to x's rank)
        assert out.exit_code == 1 and "The dimensional of input cos must be a 2 or 4, but got 3" in summaries[
            "scaffold"], summaries
        return
    assert out.exit_code == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "2 site(s) get a generated replacement" in summaries["scaffold"], summaries
    assert "tables-build: 2 replacement(s)" in summaries["verify"], summaries
